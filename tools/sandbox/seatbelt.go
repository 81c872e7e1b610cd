package sandbox

import (
	"path/filepath"
	"strings"
)

// SeatbeltPath is macOS's sandbox-exec, which applies a profile given
// with -p to the program it runs.
const SeatbeltPath = "/usr/bin/sandbox-exec"

// seatbeltBase is what every confined command needs to run at all:
// starting programs, its own processes, reading system information, the
// system services a process looks up at start, and terminals.
const seatbeltBase = `(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm-read-data)
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
`

// SeatbeltProfile is the Seatbelt profile text of p, with the same rules
// as the Linux sandbox: read-only denies every write but the devices and
// all network access; workspace-write allows writes under the writable
// folders and the temporary folder; protect and none allow everything
// else. In each, the read-only paths of the policy are denied writes, as
// the last rules (the last matching rule wins).
func SeatbeltProfile(p Policy) string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	switch p.Mode {
	case ReadOnly, WorkspaceWrite:
		b.WriteString("(deny default)\n")
		b.WriteString(seatbeltBase)
		if p.Mode == WorkspaceWrite {
			var dirs []string
			for _, d := range append(append([]string(nil), p.Writable...), p.TempDir) {
				if d != "" && filepath.IsAbs(d) {
					dirs = append(dirs, `(subpath `+sbString(filepath.Clean(d))+`)`)
				}
			}
			if len(dirs) > 0 {
				b.WriteString("(allow file-write* " + strings.Join(dirs, " ") + ")\n")
			}
		}
		// No network rule: (deny default) denies it.
	default:
		b.WriteString("(allow default)\n")
	}
	if ro := p.AlwaysProtected; len(ro) > 0 {
		var parts []string
		for _, path := range ro {
			parts = append(parts, `(literal `+sbString(path)+`)`, `(subpath `+sbString(path)+`)`)
		}
		b.WriteString("(deny file-write* " + strings.Join(parts, " ") + ")\n")
	}
	return b.String()
}

// sbString quotes s as a Seatbelt (Scheme) string.
func sbString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
