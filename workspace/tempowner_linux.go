package workspace

import (
	"bytes"
	"os"
	"strconv"
)

// procStart is the start time of process pid, in clock ticks since boot
// (/proc/<pid>/stat, field 22); ok is false when there is no such process
// or it has exited (a zombie). A pid and its start time name one process:
// a pid reused later has another start time.
func procStart(pid int) (start uint64, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself; the fields after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[i+1:])
	// fields[0] is field 3 (the state), so field 22 is fields[19].
	if len(fields) < 20 || string(fields[0]) == "Z" || string(fields[0]) == "X" {
		return 0, false
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	return start, err == nil
}

// ownerAlive reports whether the process that a temp file's name records
// still runs.
func ownerAlive(pid int, start uint64) bool {
	got, ok := procStart(pid)
	return ok && got == start
}
