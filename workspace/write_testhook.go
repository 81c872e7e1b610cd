//go:build qwenls_testhook

package workspace

import (
	"encoding/json"
	"os"
	"time"
)

// beforeRename, in a build with the qwenls_testhook tag only, stops a write
// between the temp file and the rename when QWEN_LS_TEST_PAUSE_BEFORE_RENAME
// names a file: it writes {"tmp":…,"target":…} there and then waits for
// good, so a crash test can kill the process at exactly this point. Release
// builds never compile this file, so neither a workspace nor a model can
// reach it.
func beforeRename(tmp, target string) {
	marker := os.Getenv("QWEN_LS_TEST_PAUSE_BEFORE_RENAME")
	if marker == "" {
		return
	}
	data, _ := json.Marshal(map[string]string{"tmp": tmp, "target": target})
	_ = os.WriteFile(marker+".part", data, 0o600)
	_ = os.Rename(marker+".part", marker)
	for {
		time.Sleep(time.Hour)
	}
}
