package tools_test

// truncateForLog cuts a long text for a test's message.
func truncateForLog(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
