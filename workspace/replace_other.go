//go:build !windows

package workspace

import "os"

// replaceFile renames tmp over target.
func replaceFile(tmp, target string) error { return os.Rename(tmp, target) }
