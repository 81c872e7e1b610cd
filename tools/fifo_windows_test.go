package tools_test

import "errors"

// mkfifo: Windows has no FIFOs in the file system; the tests that need one
// skip.
func mkfifo(string) error { return errors.ErrUnsupported }
