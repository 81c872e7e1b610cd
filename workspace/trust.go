package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Folder trust: a workspace's own .qwen/settings.json may start processes,
// widen permissions or change the model endpoint, so those settings apply
// only in a folder the user trusts. The user's list of trusted folders is
// ~/.qwen/trustedFolders.json, in the format Qwen Code and Gemini CLI use:
// a JSON object mapping absolute paths to a trust level.

// TrustLevel is a value of trustedFolders.json.
type TrustLevel string

const (
	// TrustFolder trusts the folder and everything below it.
	TrustFolder TrustLevel = "TRUST_FOLDER"
	// TrustParent trusts the folder's parent and everything below it.
	TrustParent TrustLevel = "TRUST_PARENT"
	// DoNotTrust marks the folder, and everything below it, untrusted,
	// overriding a trusted folder above it.
	DoNotTrust TrustLevel = "DO_NOT_TRUST"
)

// TrustFileName is the name of the trust list in the user's qwen folder.
const TrustFileName = "trustedFolders.json"

// TrustRules is the content of a trust list: path as written → level.
type TrustRules map[string]TrustLevel

// ReadTrustFile reads a trust list. A missing file is an empty list. The
// file may carry comments like the settings files. Entries whose path is
// not absolute or whose level is unknown are skipped.
func ReadTrustFile(path string) (TrustRules, error) {
	m, err := readJSONCFile(path)
	if err != nil {
		return nil, err
	}
	rules := TrustRules{}
	for p, v := range m {
		s, _ := v.(string)
		lvl := TrustLevel(strings.ToUpper(strings.TrimSpace(s)))
		switch lvl {
		case TrustFolder, TrustParent, DoNotTrust:
		default:
			continue
		}
		if !filepath.IsAbs(p) {
			continue
		}
		rules[p] = lvl
	}
	return rules, nil
}

// TrustMatch is the rule that decided about a folder.
type TrustMatch struct {
	// Path is the entry as written in the file.
	Path  string
	Level TrustLevel
}

// Decide finds the rule for dir: among the entries whose folder (the entry
// itself, or its parent for TRUST_PARENT) is dir or lies above it, the most
// specific one; at equal depth DO_NOT_TRUST wins. ok is false when no entry
// covers dir. Paths are compared both as given and with symbolic links
// resolved.
// Names are compared by the system's rules: on Windows and macOS an entry
// covers a folder whose path differs from it only in case.
func (r TrustRules) Decide(dir string) (m TrustMatch, trusted, ok bool) {
	return r.decide(NativePaths(), dir)
}

// decide is Decide comparing names by the case rules of flavor.
func (r TrustRules) decide(flavor PathFlavor, dir string) (m TrustMatch, trusted, ok bool) {
	cmp := flavor.OnNative()
	if dir == "" {
		return TrustMatch{}, false, false
	}
	forms := pathForms(dir)
	best := -1
	// Sorted for a deterministic answer among equal entries.
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, p := range keys {
		lvl := r[p]
		folder := filepath.Clean(p)
		if lvl == TrustParent {
			folder = filepath.Dir(folder)
		}
		for _, f := range pathForms(folder) {
			covered := false
			for _, d := range forms {
				if cmp.Within(f, d) {
					covered = true
					break
				}
			}
			if !covered {
				continue
			}
			depth := len(f)
			if depth > best || depth == best && lvl == DoNotTrust {
				best, m = depth, TrustMatch{Path: p, Level: lvl}
			}
		}
	}
	if best < 0 {
		return TrustMatch{}, false, false
	}
	return m, m.Level != DoNotTrust, true
}

// pathForms is p cleaned, and its real path when that differs.
func pathForms(p string) []string {
	c := filepath.Clean(p)
	out := []string{c}
	if rp := RealPath(c); rp != c {
		out = append(out, rp)
	}
	return out
}

// SetTrustLevel records level for dir in the trust list at file, keeping
// every other entry. The file is created (mode 0600) when missing; one that
// does not parse is left alone and reported, so a typo never loses the
// user's other decisions.
func SetTrustLevel(file, dir string, level TrustLevel) error {
	switch level {
	case TrustFolder, TrustParent, DoNotTrust:
	default:
		return fmt.Errorf("unknown trust level %q: use %s, %s or %s", level, TrustFolder, TrustParent, DoNotTrust)
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("the folder to trust must be an absolute path, got %q", dir)
	}
	return updateJSONFile(file, 0o600, 0o700, func(doc map[string]any) error {
		doc[filepath.Clean(dir)] = string(level)
		return nil
	})
}

// Trust is the folder-trust decision for the primary root.
type Trust struct {
	// Root is the primary root the decision is about ("" without one).
	Root string
	// Trusted: the workspace settings apply in full.
	Trusted bool
	// Denied: the user marked the folder DO_NOT_TRUST in the trust list,
	// so there is no point in asking again.
	Denied bool
	// Why says what decided, for messages ("not listed in ...").
	Why string
	// Ignored names the workspace settings left out because the folder
	// is not trusted ("mcpServers (evil)", "tools.approvalMode (yolo)"),
	// in a stable order. Empty when trusted.
	Ignored []string
	// Refused names the workspace settings left out because no
	// workspace may set them to that value, trusted or not
	// ("tools.sandbox (danger-full-access)"): trusting the folder does
	// not apply them. Set whether the folder is trusted or not.
	Refused []string
	// File is the workspace settings file the ignored or refused
	// settings are in.
	File string
}

// UntrustedIgnores reads root's .qwen/settings.json and names the settings
// in it that apply only once the folder is trusted (nil when there are
// none or the file is missing).
func UntrustedIgnores(root string) ([]string, error) {
	file := filepath.Join(root, ".qwen", "settings.json")
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := parseSettingsJSONC(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	_, ignored := untrustedView(m)
	return ignored, nil
}

// DisablesFolderTrust reports whether the settings text sets
// security.folderTrust.enabled to a value that turns folder trust off, by
// the same reading the trust decision uses, whatever the spelling
// ("security.folderTrust.enabled" as one key, half nested, written twice).
// Text that does not parse disables nothing.
func DisablesFolderTrust(text string) bool {
	m, err := parseSettingsJSONC([]byte(text))
	if err != nil {
		return false
	}
	on, set := folderTrustEnabled(m)
	return set && !on
}
