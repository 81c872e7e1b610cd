//go:build race

package rpc_test

// raceDetector: the race detector makes every command the sandbox starts
// several times slower (its supervisor is this binary).
const raceDetector = true
