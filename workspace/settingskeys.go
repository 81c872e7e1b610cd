package workspace

import (
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// knownSetting is a settings key qwen-ls reads, by its canonical dotted
// path.
type knownSetting struct {
	Path string
	// Subtree: the reader takes the whole object at Path (mcpServers,
	// webSearch) or builds the last part of the key at run time
	// (model.modalities.<kind>).
	Subtree bool
	// WorkspaceNever: the workspace layer is never read for it, trusted
	// or not, so ignoring it is not worth a notice.
	WorkspaceNever bool
}

// knownSettings lists every key qwen-ls reads. TestEveryReadKeyIsKnown
// scans the module's sources for reads of the settings and fails when one
// is missing here, or when an entry here is read nowhere. The list names
// what an untrusted folder's notice reports; it grants nothing: only
// untrustedAllowed does.
var knownSettings = []knownSetting{
	{Path: "context.fileFiltering.respectGitIgnore"},
	// Variables for the model's key lookup (newEnvLookup): below the
	// process environment and the .env files.
	{Path: "env", Subtree: true},
	{Path: "context.fileFiltering.respectQwenIgnore"},
	{Path: "context.fileName"},
	{Path: "context.includeDirectories"},
	{Path: "context.loadMemoryFromIncludeDirectories"},
	{Path: "general.defaultFileEncoding"},
	{Path: "general.sessionRetention.maxAgeDays"},
	{Path: "general.sessionRetention.maxCount"},
	// The language servers the lsp tool may start (rpc/langservers.go),
	// in Qwen Code's language-keyed shape.
	{Path: "lsp", Subtree: true},
	{Path: "mcp.allowed"},
	{Path: "mcp.excluded"},
	{Path: "mcp.mcpServerCommand"},
	{Path: "mcp.serverCommand"},
	{Path: "mcpServers", Subtree: true},
	{Path: "model.apiKey"},  // Model()
	{Path: "model.baseUrl"}, // Model()
	{Path: "model.chatCompression.contextPercentageThreshold"},
	{Path: "model.contextWindow"},
	{Path: "model.generationConfig", Subtree: true}, // Model()
	{Path: "model.maxSessionTurns"},
	{Path: "model.maxTurnRequests"},
	{Path: "model.modalities", Subtree: true},
	{Path: "model.name"}, // Model()
	{Path: "model.provider"},
	{Path: "modelProviders", Subtree: true}, // ModelProviders()
	{Path: "security.auth.selectedType"},    // SelectedAuthType()
	{Path: "permissions.allow"},
	{Path: "permissions.ask"},
	{Path: "permissions.deny"},
	{Path: "security.folderTrust.enabled", WorkspaceNever: true}, // decideTrustLocked
	{Path: "tools.allowed"},
	{Path: "tools.approvalMode"},
	{Path: "tools.callCommand"},
	{Path: "tools.commandToolTimeout"},
	{Path: "tools.core"},
	{Path: "tools.disabled"},
	{Path: "tools.discoveryCommand"},
	{Path: "tools.exclude"},
	{Path: "tools.sandbox"},
	{Path: "tools.toolCallCommand"},
	{Path: "tools.toolDiscoveryCommand"},
	{Path: "tools.truncateToolOutputLines"},
	{Path: "tools.truncateToolOutputThreshold"},
	{Path: "tools.webFetch.allowPrivateAddresses"},
	{Path: "webSearch", Subtree: true},
}

// readInsideWorkspace are the known keys this package reads itself,
// without the accessors (Model, the trust decision).
var readInsideWorkspace = map[string]bool{
	"model.apiKey": true, "model.baseUrl": true, "model.name": true, "security.folderTrust.enabled": true,
	"env": true, "model.generationConfig": true, "modelProviders": true, "security.auth.selectedType": true,
	"security.auth.apiKey": true, "security.auth.baseUrl": true,
}

// untrustedAllowed is the allow-list: the only workspace settings an
// untrusted folder may use, each with the values it may take (nil: any).
// Every entry was chosen because it cannot start a process, widen the
// permissions or the roots, raise the approval mode, change the model, its
// endpoint or a key, or change folder trust; most of them only narrow.
// Anything else from an untrusted workspace is dropped, so a key that a
// reader starts to read tomorrow stays untrusted until it is listed here.
// Keep docs/protocol.md ("Folder trust") in step.
var untrustedAllowed = map[string]func(v any) bool{
	// Which files the search and read tools skip.
	"context.fileFiltering.respectGitIgnore":  nil,
	"context.fileFiltering.respectQwenIgnore": nil,
	// Names of memory files; only plain file names are used, found in the
	// roots (and Markdown names in the user's qwen folder).
	"context.fileName": nil,
	// Reads memory files from include directories, which only trusted
	// settings can name.
	"context.loadMemoryFromIncludeDirectories": nil,
	// The encoding of new files.
	"general.defaultFileEncoding": nil,
	// Narrowing: MCP servers filtered out.
	"mcp.allowed":  nil,
	"mcp.excluded": nil,
	// Narrowing: calls that ask or are refused.
	"permissions.ask":  nil,
	"permissions.deny": nil,
	// Not a raise: the default and plan modes only.
	"tools.approvalMode": isNotARaise,
	// Narrowing: tools removed, or the only built-ins kept.
	"tools.core":     nil,
	"tools.disabled": nil,
	"tools.exclude":  nil,
	// How much tool output the model sees.
	"tools.truncateToolOutputLines":     nil,
	"tools.truncateToolOutputThreshold": nil,
	// Narrowing only: false.
	"tools.webFetch.allowPrivateAddresses": func(v any) bool { return v == false },
	// Narrowing only: any value but full access (which no workspace may
	// set, trusted or not: workspaceNarrowOnly); an unknown one counts as
	// read-only.
	"tools.sandbox": func(v any) bool { return !SandboxFullAccess(v) },
}

// The values of tools.sandbox. The reader is tools/shellsandbox.go.
const (
	// sandboxReadOnly is the default: commands judged read-only run in
	// the read-only sandbox, others that run unasked write by allow-list.
	sandboxReadOnly = "read-only"
	// sandboxWorkspaceWrite confines every command that runs unasked to
	// the roots and a private temporary folder, without TCP or UDP.
	sandboxWorkspaceWrite = "workspace-write"
	// sandboxDangerFullAccess runs commands that run unasked with no
	// sandbox at all; sandboxOff is its older name.
	sandboxDangerFullAccess = "danger-full-access"
	sandboxOff              = "off"
)

// SandboxFullAccess reports whether v, a value of tools.sandbox, turns the
// sandbox off for the commands that run unasked. The settings merge
// (which keeps it from a workspace) and the reader both ask this, so no
// spelling is full access to one and not to the other.
func SandboxFullAccess(v any) bool {
	s, ok := v.(string)
	return ok && (s == sandboxDangerFullAccess || s == sandboxOff)
}

// workspaceNarrowOnly are settings a workspace's .qwen/settings.json may
// only narrow, trusted or not: a value for which the func returns false
// widens what runs unasked beyond what the person chose, so it is left out
// of the workspace layer and the user's, editor's or system's value holds.
// Trusting the folder does not change that, so an untrusted folder's
// notice does not name it (Trust.Refused does).
var workspaceNarrowOnly = map[string]func(v any) bool{
	// Full access is the person's own decision.
	"tools.sandbox": func(v any) bool { return !SandboxFullAccess(v) },
}

// narrowOnlyView returns the workspace layer values, a canonical tree,
// without the settings of workspaceNarrowOnly that widen (a copy where it
// differs; values is not changed), and names what it left out, with the
// value when it is one of the known ones.
func narrowOnlyView(values map[string]any) (kept map[string]any, refused []string) {
	kept = values
	for _, key := range slices.Sorted(maps.Keys(workspaceNarrowOnly)) {
		v, ok := lookupCanonical(kept, key)
		if !ok || workspaceNarrowOnly[key](v) {
			continue
		}
		kept = withoutKey(kept, strings.Split(key, "."))
		name := key
		if s, _ := v.(string); key == "tools.sandbox" && SandboxFullAccess(s) {
			name += " (" + s + ")"
		}
		refused = append(refused, name)
	}
	return kept, refused
}

// withoutKey returns m without the setting at path, copying the maps on
// the way down (the others are shared), and dropping a map left empty.
func withoutKey(m map[string]any, path []string) map[string]any {
	out := maps.Clone(m)
	if len(path) == 1 {
		delete(out, path[0])
		return out
	}
	sub, ok := out[path[0]].(map[string]any)
	if !ok {
		return out
	}
	if sub = withoutKey(sub, path[1:]); len(sub) > 0 {
		out[path[0]] = sub
	} else {
		delete(out, path[0])
	}
	return out
}

func isNotARaise(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch strings.TrimSpace(s) {
	case "", "default", "plan":
		return true
	}
	return false
}

// describeIgnored gives, for some settings, a short word on the ignored
// value for the notice. Values are $VAR-expanded, so only what cannot hold
// a secret is repeated.
var describeIgnored = map[string]func(any) string{
	"mcpServers": func(x any) string {
		m, _ := x.(map[string]any)
		names := mapKeys(m)
		sort.Strings(names)
		return strings.Join(names, ", ")
	},
	"tools.approvalMode": func(x any) string {
		if mode, _ := x.(string); mode == "auto-edit" || mode == "yolo" {
			return mode
		}
		return ""
	},
	"model.baseUrl":         endpointHost,
	"security.auth.baseUrl": endpointHost,
	// The names of the variables, never their values.
	"env": func(x any) string {
		m, _ := x.(map[string]any)
		names := mapKeys(m)
		sort.Strings(names)
		return strings.Join(names, ", ")
	},
	"security.auth.selectedType": func(x any) string {
		if t, _ := x.(string); slices.Contains(authTypes, t) {
			return t
		}
		return ""
	},
	"modelProviders": func(x any) string {
		m, _ := x.(map[string]any)
		names := mapKeys(m)
		sort.Strings(names)
		return strings.Join(names, ", ")
	},
}

// endpointHost is the scheme and host of an endpoint setting, for
// messages: the path, query and user info may carry a secret ($VAR
// expansion of a key, a token in the URL) and are never repeated.
func endpointHost(x any) string {
	s, _ := x.(string)
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// untrustedView returns what an untrusted folder's workspace layer, a
// canonical tree, may use: a new tree holding only the allow-listed keys
// with allowed values. ignored names, in path order, the known settings
// that were left out and would apply once the folder is trusted (only
// those with an effect: an empty list or false is not reported). The
// filter keeps; it never removes, so what it does not know stays out.
func untrustedView(values map[string]any) (kept map[string]any, ignored []string) {
	kept = keepAllowed(values, "")
	reportIgnored(values, "", &ignored)
	return kept, ignored
}

func keepAllowed(obj map[string]any, prefix string) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k == "" {
			// No setting has an empty part; and "" would make the
			// path below it look like a top-level one.
			continue
		}
		p := joinKey(prefix, k)
		if ok, listed := untrustedAllowed[p]; listed {
			if ok == nil || ok(v) {
				out[k] = deepCopy(v)
			}
			continue
		}
		if m, isObj := v.(map[string]any); isObj && allowedBelow(p) {
			if sub := keepAllowed(m, p); len(sub) > 0 {
				out[k] = sub
			}
		}
	}
	return out
}

func allowedBelow(p string) bool {
	for k := range untrustedAllowed {
		if strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

// reportIgnored adds to ignored the known settings in obj, at prefix, that
// keepAllowed left out.
func reportIgnored(obj map[string]any, prefix string, ignored *[]string) {
	keys := mapKeys(obj)
	sort.Strings(keys)
	for _, k := range keys {
		v := obj[k]
		if k == "" {
			continue
		}
		p := joinKey(prefix, k)
		if ok, listed := untrustedAllowed[p]; listed && (ok == nil || ok(v)) {
			continue
		}
		if narrows, listed := workspaceNarrowOnly[p]; listed && !narrows(v) {
			// Trusting the folder would not apply it either.
			continue
		}
		if ks, known := knownSettingAt(p); known {
			if ks.WorkspaceNever || isEmptyValue(v) {
				continue
			}
			name := p
			if d := describeIgnored[p]; d != nil {
				if s := d(v); s != "" {
					name += " (" + s + ")"
				}
			}
			*ignored = append(*ignored, name)
			continue
		}
		if m, isObj := v.(map[string]any); isObj && knownBelow(p) {
			reportIgnored(m, p, ignored)
		}
	}
}

// knownSettingAt returns the known setting at p, or the subtree one that
// holds p.
func knownSettingAt(p string) (knownSetting, bool) {
	for _, ks := range knownSettings {
		if ks.Path == p || ks.Subtree && strings.HasPrefix(p, ks.Path+".") {
			return ks, true
		}
	}
	return knownSetting{}, false
}

func knownBelow(p string) bool {
	for _, ks := range knownSettings {
		if strings.HasPrefix(ks.Path, p+".") {
			return true
		}
	}
	return false
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func isEmptyValue(x any) bool {
	switch x := x.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case bool:
		return !x
	}
	return false
}
