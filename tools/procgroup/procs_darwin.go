package procgroup

import (
	"slices"

	"golang.org/x/sys/unix"
)

// szomb is the state of a zombie in the kernel's process table (SZOMB).
const szomb = 5

// Procs lists the live processes (zombies left out) from the kernel's
// process table, in pid order.
func Procs() (procs []Proc, ok bool) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, false
	}
	for _, kp := range kps {
		if kp.Proc.P_stat == szomb || kp.Proc.P_pid <= 0 {
			continue
		}
		procs = append(procs, Proc{PID: int(kp.Proc.P_pid), PPID: int(kp.Eproc.Ppid), PGRP: int(kp.Eproc.Pgid)})
	}
	slices.SortFunc(procs, func(a, b Proc) int { return a.PID - b.PID })
	return procs, true
}
