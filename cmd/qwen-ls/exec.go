package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/rpc"
)

// Exit codes of qwen-ls exec.
const (
	exitEndTurn   = 0
	exitError     = 1
	exitUsage     = 2
	exitStopped   = 3 // max_tokens, max_turn_requests, refusal
	exitCancelled = 130
)

// runExec runs one prompt headless: the real server in this process,
// driven over in-memory pipes by the same small client the demo uses.
func runExec(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("qwen-ls exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prompt := fs.String("p", "", "the prompt to run (required)")
	mode := fs.String("approval-mode", "default", "approval mode: default, plan, auto-edit or yolo")
	cwd := fs.String("cwd", ".", "the workspace folder")
	verbose := fs.Bool("verbose", false, "copy the server's log to stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: qwen-ls exec -p PROMPT [--approval-mode MODE] [--cwd DIR] [--verbose]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *prompt == "" {
		fmt.Fprintln(stderr, "qwen-ls exec: -p PROMPT is required")
		fs.Usage()
		return exitUsage
	}
	root, err := filepath.Abs(*cwd)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		fmt.Fprintf(stderr, "qwen-ls exec: --cwd %s: %v\n", *cwd, err)
		return exitUsage
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logw io.Writer = io.Discard
	if *verbose {
		logw = stderr
	}
	srv := rpc.NewServer(rpc.Options{Version: version, Stderr: logw})
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan struct{})
	go func() {
		srv.Serve(ctx, toServerR, toClientW)
		toClientW.Close()
		close(served)
	}()
	defer func() { toServerW.Close(); <-served }()

	pr := newPrinter(stdout, root)
	pr.notes = stderr
	c := newClient(ctx, toClientR, toServerW)
	c.onUpdate = func(_ string, u json.RawMessage) { pr.update(u) }
	c.onMessage = func(text string) { fmt.Fprintln(stderr, text) }
	sid, err := c.start(ctx, root, map[string]any{"approvalMode": *mode})
	if err != nil {
		fmt.Fprintf(stderr, "qwen-ls exec: %v\n", err)
		return exitError
	}
	defer c.stop(context.Background())

	// Ctrl-C cancels the turn; the prompt then ends "cancelled".
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			_ = c.conn.Notify(ctx, "qwen/cancel", map[string]any{"sessionId": sid})
		}
	}()

	var res struct {
		StopReason string `json:"stopReason"`
	}
	err = c.call(ctx, "qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": *prompt}}}, &res)
	pr.line("")
	if err != nil {
		var je *jsonrpc2.Error
		if errors.As(err, &je) && je.Code == rpc.CodeNoModel {
			fmt.Fprintf(stderr, "qwen-ls exec: %s\n", je.Message)
		} else {
			fmt.Fprintf(stderr, "qwen-ls exec: %v\n", err)
		}
		return exitError
	}
	fmt.Fprintf(stderr, "[stop reason: %s]\n", res.StopReason)
	switch res.StopReason {
	case "end_turn":
		return exitEndTurn
	case "cancelled":
		return exitCancelled
	}
	return exitStopped
}
