package sandbox

import "os/exec"

// macOS has no warm supervisors: every command starts its own.

type warmSup struct{ cmd *exec.Cmd }

type warmPool struct{}

var pool warmPool

func (warmPool) take(string) *warmSup { return nil }

func (warmPool) replenish(string) {}

func (s *Supervised) warmEligible() bool { return false }

func (s *Supervised) startOnWarm(w *warmSup) error { s.warm = w; return nil }
