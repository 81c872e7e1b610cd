//go:build !linux

package launch

// State is the first stage's state; only Linux has a first stage.
type State struct{}

// Started returns nil: the supervisor runs in one stage here.
func Started() *State { return nil }

// EnvWarm: only Linux has warm supervisors.
const EnvWarm = "QWEN_LS_SANDBOX_WARM"

var ready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Ready is closed at once: only Linux has warm supervisors.
func Ready() <-chan struct{} { return ready }

// Policy is "": the policy is in the supervisor's environment.
func Policy() string { return "" }
