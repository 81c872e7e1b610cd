// Package langserver starts language servers (gopls, tsserver's
// typescript-language-server, pyright or pylsp, rust-analyzer, clangd and
// those the lsp settings add) as child processes and speaks LSP to them,
// for the agent's code intelligence. Its entry point is New, which makes a
// Manager; Manager.For starts, lazily and once per server and root, the
// server covering a file and returns it as a Server, whose Call sends any
// request and whose Diagnostics and WaitDiagnostics read what it
// published.
//
// The text the servers see is fed from outside: DidOpen, DidChange and
// DidClose carry the editor's unsaved buffers (the overlay), and Wrote a
// write to disk. A file asked about and never opened is opened with the
// text Options.Text gives. Servers stop when idle and on Close; one that
// crashes is reported with the end of its stderr and started again on
// next use, a bounded number of times.
//
// The package imports nothing of qwen-ls above the tools leaves: whoever
// wires it supplies the process start (Options.Start, to put the servers
// under the sandbox) and the environment.
package langserver
