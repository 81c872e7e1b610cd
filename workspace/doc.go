// Package workspace is qwen-ls's view of the files the editor has open: the
// workspace roots and path confinement (roots.go), the overlay of unsaved
// editor buffers over the disk (overlay.go, text.go), ignore rules
// (ignore.go), the watched file index (index.go), atomic writes (write.go)
// and the layered settings files (settings.go).
//
// The entry point is New, which returns a Workspace that owns all of them.
// Nothing here knows about JSON-RPC or LSP types: paths are clean absolute
// paths and positions are converted with the Encoding the caller names.
package workspace
