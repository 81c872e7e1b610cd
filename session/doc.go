// Package session runs the agent: sessions and their history, the turn
// loop against the model (model.go), the tool scheduler that takes each call
// through validate, confirm, execute, respond and display (scheduler.go),
// approval modes, and the system prompt with its memory files (prompt.go).
//
// The entry point is NewManager; the rpc package drives it and implements
// Host, through which everything that needs the editor goes out. Nothing
// here knows about JSON-RPC: updates are plain structs whose JSON is the
// ACP session-update payload.
package session
