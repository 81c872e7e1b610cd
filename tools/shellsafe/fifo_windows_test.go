package shellsafe_test

import "errors"

// syscallMkfifo: Windows has no FIFOs in the file system; the test skips.
func syscallMkfifo(string) error { return errors.ErrUnsupported }
