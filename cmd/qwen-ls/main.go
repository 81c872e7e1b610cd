// Command qwen-ls is the Qwen Code agent as a language-server-style process.
// An editor starts it over stdio; see README.md for the commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `qwen-ls: the Qwen Code agent for editors, over the Language Server Protocol.

Usage:
  qwen-ls [--stdio]     serve one editor over stdin/stdout (LSP framing); the default
  qwen-ls --acp         serve one editor over the Agent Client Protocol (newline-delimited
                        JSON-RPC on stdin/stdout), for Zed and other ACP editors
  qwen-ls demo          watch the agent work on a sample workspace with a scripted
                        model (no API key, no network)
  qwen-ls exec -p PROMPT [--approval-mode MODE] [--cwd DIR]
                        run one prompt headless against the configured model
  qwen-ls trust [--parent | --untrust] [DIR]
                        trust DIR (default: the current folder), so that its own
                        .qwen/settings.json may start MCP servers and discovery
                        commands, add allow rules, raise the approval mode or
                        change the model endpoint
  qwen-ls sandbox-exec -- PROGRAM [ARG]...
                        internal: the supervisor qwen-ls starts around every
                        command it runs (it confines the command and kills it
                        when the server dies); it needs the policy qwen-ls
                        passes in its environment
  qwen-ls --version     print the version
  qwen-ls --help        print this help

Editors start qwen-ls themselves; see README.md for VS Code and Neovim.
Logs go to stderr and, once connected over LSP, to the editor's log
(window/logMessage, info and above); stdout carries only protocol messages.
Over LSP, stderr gets warnings and errors only, since editors file every
stderr line as an error; over ACP it gets info too. QWEN_LS_LOG=debug, info,
warn or error sets the stderr level.
`

// scriptedModelMoved answers the subcommand the editors' tests once used.
const scriptedModelMoved = `qwen-ls: the scripted model is no longer part of qwen-ls; it is its own
test program, with the same flags:
  go build -o qwen-scripted-model ./cmd/qwen-scripted-model
  ./qwen-scripted-model --script FILE [--var NAME=VALUE]... [--url-file FILE]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "demo":
			return runDemo(stdout, stderr)
		case "exec":
			return runExec(args[1:], stdout, stderr)
		case "scripted-model":
			fmt.Fprint(stderr, scriptedModelMoved)
			return 2
		case "trust":
			return runTrust(args[1:], stdout, stderr)
		case sandbox.Arg:
			// With its policy, the supervisor took over while the
			// packages were initialised and never gets here.
			fmt.Fprintln(stderr, "qwen-ls: sandbox-exec is started by qwen-ls itself, with a policy in its environment")
			return 2
		}
	}
	fs := flag.NewFlagSet("qwen-ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	stdio := fs.Bool("stdio", false, "serve over stdio (default)")
	acp := fs.Bool("acp", false, "serve the Agent Client Protocol")
	showVersion := fs.Bool("version", false, "print the version")
	help := fs.Bool("help", false, "print help")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *help:
		fmt.Fprint(stdout, usage)
		return 0
	case *showVersion:
		fmt.Fprintf(stdout, "qwen-ls %s\n", version)
		return 0
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "qwen-ls: unknown argument %q\n\n%s", fs.Arg(0), usage)
		return 2
	case *acp && *stdio:
		fmt.Fprintln(stderr, "qwen-ls: choose one of --stdio and --acp")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	level, err := stderrLevel(os.Getenv("QWEN_LS_LOG"), *acp)
	if err != nil {
		fmt.Fprintf(stderr, "qwen-ls: %v\n", err)
	}
	srv := rpc.NewServer(rpc.Options{Version: version, Stderr: stderr, StderrLevel: level, ACP: *acp})
	return srv.Serve(ctx, stdin, stdout)
}

// stderrLevel is the least severe log level written to stderr: QWEN_LS_LOG
// when set, else warnings over LSP (Neovim and VS Code file every stderr
// line as an error, and info reaches them through window/logMessage) and
// info over ACP (whose clients have only stderr).
func stderrLevel(env string, acp bool) (rpc.Level, error) {
	def := rpc.LevelWarn
	if acp {
		def = rpc.LevelInfo
	}
	switch strings.ToLower(strings.TrimSpace(env)) {
	case "":
		return def, nil
	case "debug":
		return rpc.LevelDebug, nil
	case "info":
		return rpc.LevelInfo, nil
	case "warn", "warning":
		return rpc.LevelWarn, nil
	case "error":
		return rpc.LevelError, nil
	}
	return def, fmt.Errorf("QWEN_LS_LOG=%q is not one of debug, info, warn, error; logging %s and above", env, def)
}
