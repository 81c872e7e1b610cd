package procgroup

// running reports whether process pid runs.
func running(pid int) bool { return processRunning(pid) }
