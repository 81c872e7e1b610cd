package procgroup

// Proc is one live process: its pid, its parent's and its process group's
// (on Windows, PGRP is 0).
type Proc struct{ PID, PPID, PGRP int }
