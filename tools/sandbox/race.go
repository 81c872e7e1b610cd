//go:build race

package sandbox

// raceEnabled: this binary has the race detector, whose runtime sleeps a
// second when the process exits unless GORACE says otherwise.
const raceEnabled = true
