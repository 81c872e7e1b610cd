// Package rpc is qwen-ls's edge: the JSON-RPC connection to the editor, the
// LSP lifecycle, text synchronisation into the workspace overlay, and the
// conversion between wire positions and the workspace's byte offsets.
//
// The entry point is NewServer followed by Serve, which reads messages until
// the editor sends exit or closes the stream and returns the process's exit
// code. Notifications are applied in arrival order on the read goroutine;
// requests that wait on the editor or on long work run off it, so the
// connection never deadlocks and never reorders didChange.
package rpc
