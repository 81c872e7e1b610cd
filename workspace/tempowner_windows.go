package workspace

import (
	"golang.org/x/sys/windows"
)

// procStart is the creation time of process pid, in 100 ns steps since
// 1601 (GetProcessTimes); ok is false when there is no such process or it
// has exited. A pid and its creation time name one process.
func procStart(pid int) (start uint64, ok bool) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil || code != stillActive {
		return 0, false
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, false
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime), true
}

// stillActive is GetExitCodeProcess's answer for a process that runs.
const stillActive = 259

// ownerAlive reports whether the process that a temp file's name records
// still runs.
func ownerAlive(pid int, start uint64) bool {
	got, ok := procStart(pid)
	return ok && got == start
}
