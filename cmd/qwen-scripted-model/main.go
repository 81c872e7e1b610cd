// Command qwen-scripted-model serves a scripted OpenAI-compatible model
// on 127.0.0.1 for the editors' tests (session/modeltest behind a command
// line). It is a test tool, kept out of the qwen-ls binary; `qwen-ls demo`
// has its own small player.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

const usage = `Usage: qwen-scripted-model [--script FILE] [--var NAME=VALUE]... [--url-file FILE]

Serves a scripted OpenAI-compatible model on 127.0.0.1 for editor tests and
trying an editor without a key: each chat request gets the next scripted
response (see session/modeltest/script.go for the format; testdata/scripts
holds examples). $NAME in a script is replaced by --var NAME=VALUE.
The first line on stdout is the base URL to give qwen-ls as OPENAI_BASE_URL.
Tests in other processes script it and read what it was sent through
POST /_control/script and GET /_control/requests. It stops when stdin closes
or on SIGTERM/SIGINT.
`

type varFlags map[string]string

func (v varFlags) String() string { return "" }
func (v varFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	v[name] = value
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run serves the scripted model until stdin closes or a signal arrives.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("qwen-scripted-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	script := fs.String("script", "", "a script file to start with")
	urlFile := fs.String("url-file", "", "also write the base URL to this file")
	vars := varFlags{}
	fs.Var(vars, "var", "NAME=VALUE expanded as $NAME in scripts (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	srv, err := modeltest.NewServer()
	if err != nil {
		fmt.Fprintf(stderr, "qwen-scripted-model: %v\n", err)
		return 1
	}
	defer srv.Close()
	srv.SetVars(vars)
	if *script != "" {
		rs, err := modeltest.LoadScript(*script, vars)
		if err != nil {
			fmt.Fprintf(stderr, "qwen-scripted-model: %v\n", err)
			return 1
		}
		srv.Push(rs...)
	}
	if *urlFile != "" {
		// Atomically: a test waiting for the file never reads it half written.
		if err := workspace.WriteFileAtomic(*urlFile, []byte(srv.URL+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "qwen-scripted-model: %v\n", err)
			return 1
		}
	}
	fmt.Fprintln(stdout, srv.URL)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(stdinClosed)
	}()
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	}
	if os.Getenv("QWEN_SCRIPTED_MODEL_DUMP") != "" {
		_ = json.NewEncoder(stderr).Encode(srv.Summaries())
	}
	return 0
}
