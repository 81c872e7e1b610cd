package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools"
)

// suggestions is how many names "Did you mean" offers at most.
const suggestions = 3

// Lookup finds a registered tool by name, or by alias when no tool has that
// name. An unknown name is a tool_not_registered error that names the
// closest registered names (tools.md §4.1).
func (s *Snapshot) Lookup(name string) (Entry, *tools.ToolError) {
	if i, ok := s.index[name]; ok {
		return s.entries[i], nil
	}
	return Entry{}, tools.NewError(tools.ErrorToolNotRegistered, notRegistered(name, s.Names()))
}

// notRegistered words the error for an unknown name: the three registered
// names closest by Levenshtein distance, ties broken by name.
func notRegistered(name string, names []string) string {
	msg := fmt.Sprintf("There is no tool named %q; call tools by their exact registered names.", name)
	closest := closestNames(name, names, suggestions)
	quoted := make([]string, len(closest))
	for i, n := range closest {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	switch len(quoted) {
	case 0:
		return msg
	case 1:
		return msg + " Did you mean " + quoted[0] + "?"
	default:
		return msg + " Did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1] + "?"
	}
}

func closestNames(name string, names []string, k int) []string {
	type scored struct {
		name string
		dist int
	}
	all := make([]scored, len(names))
	for i, n := range names {
		all[i] = scored{n, levenshtein(name, n)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, k)
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.name)
	}
	return out
}

// levenshtein is the edit distance (insert, delete, substitute one rune).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
