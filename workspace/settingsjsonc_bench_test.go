package workspace

import (
	"fmt"
	"strings"
	"testing"
)

// benchSettingsFile is a settings file of the size people keep: comments,
// trailing commas, a few MCP servers and permission rules.
func benchSettingsFile() []byte {
	var b strings.Builder
	b.WriteString("// user settings\n{\n  /* the model */\n  \"model\": {\"name\": \"qwen3-coder-plus\", \"baseUrl\": \"http://127.0.0.1:11434/v1\",},\n")
	b.WriteString("  \"tools\": {\"approvalMode\": \"auto-edit\", \"exclude\": [\"web_search\",], // no web\n  },\n  \"mcpServers\": {\n")
	for i := range 20 {
		fmt.Fprintf(&b, "    // server %d\n    \"server%d\": {\"command\": \"node\", \"args\": [\"srv%d.js\", \"--port\", \"%d\",], \"env\": {\"TOKEN\": \"$TOKEN_%d\"}, \"timeout\": 30000},\n", i, i, i, 9000+i, i)
	}
	b.WriteString("  },\n  \"permissions\": {\"allow\": [")
	for i := range 50 {
		fmt.Fprintf(&b, "\"Bash(git log %d *)\", ", i)
	}
	b.WriteString("],},\n}\n")
	return []byte(b.String())
}

// BenchmarkParseSettingsFile measures turning one settings file into its
// canonical tree, the work each settings load does per file.
func BenchmarkParseSettingsFile(b *testing.B) {
	data := benchSettingsFile()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseSettingsJSONC(data); err != nil {
			b.Fatal(err)
		}
	}
}
