//go:build !linux

package launch

// State is the first stage's state; only Linux has a first stage.
type State struct{}

// Started returns nil: the supervisor runs in one stage here.
func Started() *State { return nil }
