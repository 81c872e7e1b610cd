package procgroup

// Proc is one live process: its pid, its parent's and its process group's.
type Proc struct{ PID, PPID, PGRP int }
