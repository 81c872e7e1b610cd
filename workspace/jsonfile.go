package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// updateJSONFile changes the JSON object stored in path: it reads the file
// (a missing or blank one is an empty object), lets change edit the
// object, and writes it back atomically as indented JSON (comments are not
// kept). The whole read-change-write holds an exclusive lock on the file's
// folder, so that two writers, such as two servers saving allow rules or a
// server and `qwen-ls trust`, never lose each other's change. A file that
// does not parse is left alone and reported. The folder is created with
// mode dirPerm when missing; a new file gets perm.
func updateJSONFile(path string, perm, dirPerm os.FileMode, change func(doc map[string]any) error) error {
	return updateJSONFileWith(path, perm, dirPerm, parseJSONC, change)
}

// updateJSONFileWith is updateJSONFile reading the file with parse (a
// settings file is read into its canonical tree, so that the change edits
// the one place each setting lives).
func updateJSONFileWith(path string, perm, dirPerm os.FileMode, parse func([]byte) (map[string]any, error), change func(doc map[string]any) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	unlock, err := lockFolder(dir)
	if err != nil {
		return err
	}
	defer unlock()
	doc := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil && len(bytes.TrimSpace(data)) > 0:
		if doc, err = parse(data); err != nil {
			return fmt.Errorf("%s does not parse, so it was left alone; fix or remove it first: %w", path, err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := change(doc); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(out, '\n'), perm)
}

// lockFileName is the file in a locked folder whose byte range carries the
// lock on Windows, where a folder's handle cannot be locked (lockFolder).
// It stays empty, and stays behind.
const lockFileName = ".qwen-ls.lock"
