// Package commands reads custom slash commands (TOML files under a commands folder) and expands their prompts.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
)

// Where a command comes from.
const (
	SourceBuiltin = "builtin"
	SourceUser    = "user"
	SourceProject = "project"
)

// ArgsPlaceholder is replaced with the command's arguments.
const ArgsPlaceholder = "{{args}}"

// Limits on what a commands folder may hold: a folder cloned with a project
// must not make the server read without bound.
const (
	maxFileSize = 256 << 10
	maxFiles    = 1000
	maxDepth    = 8
)

// Command is one custom command.
type Command struct {
	// Name has no leading slash; subfolders are joined with ":".
	Name        string
	Description string
	Prompt      string
	// Source is SourceUser or SourceProject.
	Source string
	// Path is the TOML file.
	Path string
}

// TakesArgs reports whether the prompt places the arguments itself.
func (c Command) TakesArgs() bool { return strings.Contains(c.Prompt, ArgsPlaceholder) }

// Dir is a commands folder and the source its commands have.
type Dir struct {
	Path   string
	Source string
}

// file is the TOML shape Qwen Code defines: prompt (required) and
// description.
type file struct {
	Prompt      *string `toml:"prompt"`
	Description string  `toml:"description"`
}

// Load reads every *.toml file under the folders, in order: a command of a
// later folder replaces one of the same name from an earlier folder (the
// project's replace the user's). A folder that does not exist holds no
// commands. Problems names the files left out and why.
func Load(dirs ...Dir) (cmds []Command, problems []string) {
	byName := map[string]Command{}
	for _, d := range dirs {
		for _, c := range loadDir(d, &problems) {
			byName[c.Name] = c
		}
	}
	for _, c := range byName {
		cmds = append(cmds, c)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds, problems
}

func loadDir(d Dir, problems *[]string) []Command {
	if d.Path == "" {
		return nil
	}
	if fi, err := os.Stat(d.Path); err != nil || !fi.IsDir() {
		return nil
	}
	var out []Command
	n := 0
	err := filepath.WalkDir(d.Path, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", path, err))
			if de != nil && de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(d.Path, path)
		if de.IsDir() {
			if rel != "." && strings.Count(rel, string(filepath.Separator)) >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(de.Name(), ".toml") {
			return nil
		}
		if n++; n > maxFiles {
			*problems = append(*problems, fmt.Sprintf("%s: more than %d command files; the rest were left out", d.Path, maxFiles))
			return fs.SkipAll
		}
		c, err := readFile(path, rel, d.Source)
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", path, err))
			return nil
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", d.Path, err))
	}
	return out
}

func readFile(path, rel, source string) (Command, error) {
	name, err := nameOf(rel)
	if err != nil {
		return Command{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Command{}, err
	}
	if !fi.Mode().IsRegular() {
		return Command{}, errors.New("not a regular file")
	}
	if fi.Size() > maxFileSize {
		return Command{}, fmt.Errorf("larger than %d KiB", maxFileSize>>10)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Command{}, err
	}
	var f file
	if _, err := toml.Decode(string(data), &f); err != nil {
		return Command{}, fmt.Errorf("not valid TOML: %v", err)
	}
	if f.Prompt == nil {
		return Command{}, errors.New(`no "prompt" string`)
	}
	desc := strings.TrimSpace(f.Description)
	if desc == "" {
		desc = "Custom command from " + filepath.ToSlash(rel)
	}
	return Command{Name: name, Description: desc, Prompt: *f.Prompt, Source: source, Path: path}, nil
}

// nameOf turns a file's path under its commands folder into the command
// name: "git/commit.toml" is "git:commit". A ":" in a file or folder name
// becomes "_", so it cannot fake a namespace.
func nameOf(rel string) (string, error) {
	rel = strings.TrimSuffix(filepath.ToSlash(rel), ".toml")
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if p == "" || strings.IndexFunc(p, unicode.IsSpace) >= 0 {
			return "", fmt.Errorf("the name %q cannot be typed as a command (empty or with spaces)", rel)
		}
		parts[i] = strings.ReplaceAll(p, ":", "_")
	}
	return strings.Join(parts, ":"), nil
}

// Hooks are what expanding a prompt may do outside the text.
type Hooks struct {
	// ReadFile returns the text of @{path}, path as written in the prompt.
	ReadFile func(path string) (string, error)
	// Shell runs the command of !{…} and returns what goes into the
	// prompt; an error stops the command (refused, or it could not run).
	Shell func(ctx context.Context, command string) (string, error)
}

// Expand turns a command's prompt and the arguments typed after its name
// into the text sent to the model, as Qwen Code does:
//   - @{path} is replaced with the file's text;
//   - !{command} is replaced with the command's output, with {{args}} in
//     it replaced by the arguments quoted for the shell;
//   - {{args}} elsewhere is replaced by the arguments as typed;
//   - a prompt without {{args}} gets the whole invocation ("/name args")
//     appended after a blank line when there are arguments.
//
// The prompt is read once, left to right: text that a file or a command
// brings in, or that the arguments hold, is never expanded again.
func Expand(ctx context.Context, name, prompt, args string, h Hooks) (string, error) {
	segs, err := split(prompt)
	if err != nil {
		return "", fmt.Errorf("/%s: %w", name, err)
	}
	var b strings.Builder
	for _, s := range segs {
		switch s.kind {
		case segText:
			b.WriteString(strings.ReplaceAll(s.text, ArgsPlaceholder, args))
		case segFile:
			path := strings.TrimSpace(s.text)
			if path == "" {
				return "", fmt.Errorf("/%s: @{} names no file", name)
			}
			if h.ReadFile == nil {
				return "", fmt.Errorf("/%s: files cannot be read here", name)
			}
			text, err := h.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("/%s: @{%s}: %w", name, path, err)
			}
			b.WriteString(text)
		case segShell:
			cmd := strings.TrimSpace(s.text)
			if cmd == "" {
				continue
			}
			cmd = strings.ReplaceAll(cmd, ArgsPlaceholder, ShellQuote(args))
			if h.Shell == nil {
				return "", fmt.Errorf("/%s: commands cannot run here", name)
			}
			out, err := h.Shell(ctx, cmd)
			if err != nil {
				return "", fmt.Errorf("/%s: !{%s}: %w", name, cmd, err)
			}
			b.WriteString(out)
		}
	}
	out := b.String()
	if !strings.Contains(prompt, ArgsPlaceholder) && strings.TrimSpace(args) != "" {
		out = strings.TrimRight(out, "\n") + "\n\n/" + name + " " + args
	}
	return out, nil
}

// ShellQuote quotes s as one word for a POSIX shell.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type segKind int

const (
	segText segKind = iota
	segFile
	segShell
)

type segment struct {
	kind segKind
	text string
}

// split cuts a prompt into text and the @{…} and !{…} injections, whose
// braces may nest ("!{awk '{print $1}' f}"). An injection without its
// closing brace is an error.
func split(prompt string) ([]segment, error) {
	var out []segment
	start := 0
	for i := 0; i < len(prompt)-1; i++ {
		c := prompt[i]
		if (c != '@' && c != '!') || prompt[i+1] != '{' {
			continue
		}
		depth, j := 1, i+2
		for ; j < len(prompt) && depth > 0; j++ {
			switch prompt[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
		}
		if depth > 0 {
			return nil, fmt.Errorf("the %c{ at byte %d has no closing }", c, i)
		}
		if i > start {
			out = append(out, segment{segText, prompt[start:i]})
		}
		kind := segFile
		if c == '!' {
			kind = segShell
		}
		out = append(out, segment{kind, prompt[i+2 : j-1]})
		start = j
		i = j - 1
	}
	if start < len(prompt) {
		out = append(out, segment{segText, prompt[start:]})
	}
	return out, nil
}
