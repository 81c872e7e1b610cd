package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStats is what /proc says about one process.
type procStats struct {
	RSSKB    int // VmRSS
	AnonKB   int // RssAnon: the heap, stacks and other private memory
	FileKB   int // RssFile: pages of the binary and other mapped files
	Threads  int
	FDs      int
	Children int // live processes whose parent it is
}

func readProc(pid int) (procStats, error) {
	var st procStats
	status, err := procStatus(pid)
	if err != nil {
		return st, err
	}
	st.RSSKB, st.Threads = status["VmRSS"], status["Threads"]
	st.AnonKB, st.FileKB = status["RssAnon"], status["RssFile"]
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return st, err
	}
	st.FDs = len(fds)
	st.Children = len(childrenOf(pid))
	return st, nil
}

// procStatus reads the fields of /proc/PID/status that start with a
// number (sizes are in kB).
func procStatus(pid int) (map[string]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if fields := strings.Fields(v); len(fields) > 0 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				out[name] = n
			}
		}
	}
	return out, sc.Err()
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces; fields after
		// the last ')' are: state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 { // zombies count: an unreaped child is a leak too
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, p)
			}
		}
	}
	return out
}

// selfRSSKB is this process's VmRSS.
func selfRSSKB() int {
	st, _ := readProc(os.Getpid())
	return st.RSSKB
}
