package tools_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestParseAgentDefinition(t *testing.T) {
	for _, c := range []struct {
		name string
		file string
		want tools.AgentDefinition
	}{
		{"minimal", "---\nname: scout\ndescription: Looks around.\n---\n\nYou look around.\n",
			tools.AgentDefinition{Name: "scout", Description: "Looks around.", MaxTurns: 50, SystemPrompt: "You look around."}},
		{"every key, flow list, comments, CRLF, BOM",
			"\ufeff---\r\n# a comment\r\nname: \"scout\"\r\ndescription: 'It''s quick' # trailing\r\ntools: [read_file, \"search_file_content\"]\r\nmodel: small\r\nmax_turns: 7\r\ncolor: blue\r\n---\r\nBody line 1\r\nBody line 2\r\n",
			tools.AgentDefinition{Name: "scout", Description: "It's quick", Tools: []string{"read_file", "search_file_content"}, Model: "small", MaxTurns: 7, SystemPrompt: "Body line 1\nBody line 2"}},
		{"block list at the key's indentation, folded description",
			"---\nname: scout\ndescription: >\n  Looks around\n  the code.\ntools:\n- glob\n- grep_search\n---\nGo.\n",
			tools.AgentDefinition{Name: "scout", Description: "Looks around the code.", Tools: []string{"glob", "grep_search"}, MaxTurns: 50, SystemPrompt: "Go."}},
		{"indented block list, plain continuation",
			"---\nname: scout\ndescription: Looks around\n  the code.\ntools:\n  - glob\n  - 'read_file'\n---\nGo.\n",
			tools.AgentDefinition{Name: "scout", Description: "Looks around the code.", Tools: []string{"glob", "read_file"}, MaxTurns: 50, SystemPrompt: "Go."}},
		{"comma-separated tools, unknown nested key skipped",
			"---\nname: scout\ndescription: d\ntools: read_file, glob\nrunConfig:\n  max_time_minutes: 5\n  nested:\n    deep: 1\n---\nGo.\n",
			tools.AgentDefinition{Name: "scout", Description: "d", Tools: []string{"read_file", "glob"}, MaxTurns: 50, SystemPrompt: "Go."}},
		{"empty tools list means none", "---\nname: thinker\ndescription: d\ntools: []\n---\nThink.\n",
			tools.AgentDefinition{Name: "thinker", Description: "d", Tools: []string{}, MaxTurns: 50, SystemPrompt: "Think."}},
		{"null tools means all", "---\nname: all\ndescription: d\ntools:\n---\nAll.\n",
			tools.AgentDefinition{Name: "all", Description: "d", MaxTurns: 50, SystemPrompt: "All."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tools.ParseAgentDefinition([]byte(c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func TestParseAgentDefinitionRejects(t *testing.T) {
	for _, c := range []struct{ file, err string }{
		{"name: x\n", `does not start with a "---" line`},
		{"---\nname: x\ndescription: d\n", `no closing "---" line`},
		{"---\ndescription: d\n---\nBody.\n", `"name" is required`},
		{"---\nname: x\n---\nBody.\n", `"description" is required`},
		{"---\nname: x\ndescription: \"\"\n---\nBody.\n", `"description" is required`},
		{"---\nname: x\ndescription: d\nmax_turns: 0\n---\nBody.\n", `"max_turns" must be a whole number of at least 1`},
		{"---\nname: x\ndescription: d\nmax_turns: many\n---\nBody.\n", `"max_turns" must be a whole number`},
		{"---\nname: x\ndescription: d\n---\n\n  \n", "the system prompt) is empty"},
		{"---\nname: x\nname: y\ndescription: d\n---\nBody.\n", `"name" appears twice`},
		{"---\nname: [a, b]\ndescription: d\n---\nBody.\n", `"name" must be a single value`},
		{"---\nname: x\ndescription: d\ntools:\n  read: yes\n---\nBody.\n", "nested mappings are not supported"},
		{"---\nname: \"x\ndescription: d\n---\nBody.\n", "unterminated double-quoted value"},
		{"---\njust words\n---\nBody.\n", `want "key: value"`},
	} {
		_, err := tools.ParseAgentDefinition([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err = %v, want one containing %q", c.file, err, c.err)
		}
	}
}

// Project over user over built-in, names compared case-insensitively; an
// invalid file is skipped with one warning and comes back once fixed.
func TestAgentsPrecedenceAndInvalidFiles(t *testing.T) {
	e := newTestEnv(t, nil)
	user := filepath.Join(e.Home, "agents")
	project := filepath.Join(e.Root, ".qwen", "agents")
	writeAgent(t, user, "reviewer.md", "---\nname: reviewer\ndescription: user reviewer\n---\nUser.\n")
	writeAgent(t, user, "gp.md", "---\nname: general-purpose\ndescription: my own general agent\nmax_turns: 9\n---\nMine.\n")
	writeAgent(t, user, "notes.txt", "not a definition")
	writeAgent(t, project, "Reviewer.md", "---\nname: Reviewer\ndescription: project reviewer\n---\nProject.\n")
	bad := writeAgent(t, project, "broken.md", "---\nname: broken\n---\nNo description.\n")
	writeAgent(t, project, "twin.md", "---\nname: reviewer\ndescription: a second project reviewer\n---\nTwin.\n")

	agents := tools.NewAgents(e.Env)
	var mu sync.Mutex
	var warned []tools.AgentProblem
	agents.OnWarning(func(p tools.AgentProblem) {
		mu.Lock()
		warned = append(warned, p)
		mu.Unlock()
	})
	var got []string
	for _, d := range agents.List() {
		got = append(got, d.Name+"="+d.Source+":"+d.Description)
	}
	want := []string{"general-purpose=user:my own general agent", "Reviewer=project:project reviewer"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("definitions %q, want %q", got, want)
	}
	if d, ok := agents.Find("GENERAL-PURPOSE"); !ok || d.MaxTurns != 9 || d.SystemPrompt != "Mine." || d.Path != filepath.Join(user, "gp.md") {
		t.Errorf("find general-purpose: %+v %v", d, ok)
	}
	problems := agents.Problems()
	if len(problems) != 2 || problems[0].Path != bad || !strings.Contains(problems[0].Error(), `"description" is required`) ||
		!strings.Contains(problems[1].Error(), `the name "reviewer" is already used by `+filepath.Join(project, "Reviewer.md")) {
		t.Errorf("problems %v", problems)
	}
	// Reading again without a change warns no more.
	agents.List()
	writeAgent(t, user, "other.md", "---\nname: other\ndescription: o\n---\nO.\n")
	agents.List()
	mu.Lock()
	if len(warned) != 2 {
		t.Errorf("%d warnings, want one per broken file: %v", len(warned), warned)
	}
	mu.Unlock()

	writeAgent(t, project, "broken.md", "---\nname: broken\ndescription: fixed now\n---\nFixed.\n")
	if d, ok := agents.Find("broken"); !ok || d.Description != "fixed now" {
		t.Errorf("the fixed file was not read again: %+v", d)
	}
	if len(agents.Problems()) != 1 {
		t.Errorf("problems after the fix: %v", agents.Problems())
	}
	// Without the user's file the built-in comes back.
	if err := os.Remove(filepath.Join(user, "gp.md")); err != nil {
		t.Fatal(err)
	}
	if d, _ := agents.Find("general-purpose"); d.Source != tools.AgentBuiltin || d.MaxTurns != 50 || d.Tools != nil {
		t.Errorf("built-in general-purpose: %+v", d)
	}
}
