package rpc

import "github.com/qwen-ls/qwen-ls/tools/sandbox"

// sandboxInfo is experimental.qwen.sandbox of the initialize result: which
// OS protection confines the commands the agent runs unasked, for the
// clients to show (the status bar tooltip, :checkhealth qwen).
func sandboxInfo() map[string]any {
	s := sandbox.Probe()
	return map[string]any{
		"summary":         s.String(),
		"os":              s.OS,
		"landlock":        s.Landlock,
		"seatbelt":        s.Seatbelt,
		"mountNamespaces": s.Mounts,
		"readOnly":        s.ReadOnly(),
	}
}
