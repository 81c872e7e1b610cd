package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

const trustUsage = `Usage: qwen-ls trust [--parent | --untrust] [DIR]

Records DIR (default: the current folder) in the trusted folders list,
$QWEN_HOME/trustedFolders.json (default ~/.qwen/trustedFolders.json, the
file Qwen Code uses too). In a trusted folder, the folder's own
.qwen/settings.json applies in full: its MCP servers and tool discovery
commands run, its allow rules and approval mode apply, and its model
endpoint is used. Trust only folders whose authors you trust.
A running qwen-ls applies the change at once.

  --parent    trust DIR's parent folder and everything in it (TRUST_PARENT)
  --untrust   mark DIR as never trusted, even below a trusted folder
              (DO_NOT_TRUST)
`

// runTrust records a folder in the trust list.
func runTrust(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, trustUsage) }
	parent := fs.Bool("parent", false, "trust the parent folder")
	untrust := fs.Bool("untrust", false, "mark the folder as not trusted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 || *parent && *untrust {
		fs.Usage()
		return 2
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintf(stderr, "qwen-ls trust: %v\n", err)
		return 1
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "qwen-ls trust: %s is not a folder\n", abs)
		return 1
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	file := workspace.NewSettings(workspace.SettingsOptions{}).TrustFile()
	if file == "" {
		fmt.Fprintln(stderr, "qwen-ls trust: there is no home folder to keep the trust list in; set QWEN_HOME")
		return 1
	}
	level := workspace.TrustFolder
	switch {
	case *parent:
		level = workspace.TrustParent
	case *untrust:
		level = workspace.DoNotTrust
	}
	if err := workspace.SetTrustLevel(file, abs, level); err != nil {
		fmt.Fprintf(stderr, "qwen-ls trust: %v\n", err)
		return 1
	}
	rules, err := workspace.ReadTrustFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "qwen-ls trust: %v\n", err)
		return 1
	}
	m, trusted, _ := rules.Decide(abs)
	switch {
	case level == workspace.DoNotTrust:
		fmt.Fprintf(stdout, "%s is not trusted (%s in %s): its risky workspace settings stay ignored.\n", abs, level, file)
		return 0
	case level == workspace.TrustParent:
		fmt.Fprintf(stdout, "%s and every folder in it are trusted (%s for %s in %s).\n", filepath.Dir(abs), level, abs, file)
	default:
		fmt.Fprintf(stdout, "%s is trusted (recorded in %s).\n", abs, file)
	}
	if !trusted {
		// A more specific DO_NOT_TRUST entry still wins.
		fmt.Fprintf(stdout, "But %s stays untrusted: %s has %q: %s, which is more specific. Run `qwen-ls trust %s` to trust it.\n", abs, file, m.Path, m.Level, abs)
		return 0
	}
	ignored, err := workspace.UntrustedIgnores(abs)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "Its workspace settings could not be read: %v\n", err)
	case len(ignored) > 0:
		fmt.Fprintf(stdout, "Its .qwen/settings.json now applies in full, including: %s.\n", strings.Join(ignored, ", "))
	}
	return 0
}
