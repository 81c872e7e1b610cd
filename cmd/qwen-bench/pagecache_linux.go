package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropFromPageCache writes path's dirty pages back and asks the kernel
// to drop its cached pages, so that the next process to map it reads it
// from disk (what `sync FILE; dd if=FILE iflag=nocache count=0` does).
func dropFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// filePMDMappedKB is FilePmdMapped of /proc/PID/smaps_rollup: the file
// pages the process maps 2 MB at a time, from large page-cache folios.
func filePMDMappedKB(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "FilePmdMapped:"); ok {
			if fields := strings.Fields(v); len(fields) > 0 {
				return strconv.Atoi(fields[0])
			}
		}
	}
	return 0, sc.Err()
}
