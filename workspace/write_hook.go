//go:build !qwenls_testhook

package workspace

// beforeRename runs between writing a temp file and renaming it over the
// target. Release builds do nothing here; a build with the qwenls_testhook
// tag can stop at this point so a test can kill the process mid-write
// (write_testhook.go).
func beforeRename(tmp, target string) {}
