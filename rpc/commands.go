package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/commands"
)

// Slash commands (docs/protocol.md "Slash commands"): the built-ins, and
// custom commands from ~/.qwen/commands and (in a trusted folder) the
// primary root's .qwen/commands. A prompt that starts with "/name" runs the
// command; qwen/listCommands lists them, and available_commands_update
// tells each open session when the list changes.

// commandInfo is one command as qwen/listCommands lists it.
type commandInfo struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *commandInput `json:"input"`
	Source      string        `json:"source"`
	NeedsModel  bool          `json:"needsModel"`
}

// acpCommand is ACP's AvailableCommand; input is left out when the
// command takes no arguments.
type acpCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *commandInput `json:"input,omitempty"`
}

type commandInput struct {
	Hint string `json:"hint"`
}

// builtin is a command the server implements.
type builtin struct {
	description string
	hint        string
	needsModel  bool
	run         func(s *Server, ctx context.Context, sess *session.Session, args string) (*slashResult, error)
}

// builtins are the built-in commands; a custom command of the same name is
// ignored.
var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		"compress": {description: "Replace the conversation so far with a summary, to free the model's context", needsModel: true, run: (*Server).cmdCompress},
		"clear":    {description: "Start the conversation over; the old one stays in the session list", run: (*Server).cmdClear},
		"stats":    {description: "Tokens, cache hits, tool calls and time of this session", run: (*Server).cmdStats},
		"init":     {description: "Look at the project and write a QWEN.md for it (reviewed like any edit)", hint: "[overwrite]", needsModel: true, run: (*Server).cmdInit},
		"memory":   {description: "Show the memory files, add a fact to them, or read them again", hint: "show | add <text> | refresh", run: (*Server).cmdMemory},
		"tools":    {description: "List the tools the model can use", run: (*Server).cmdTools},
		"mcp":      {description: "List the MCP servers, their state and their tools", run: (*Server).cmdMCP},
		"model":    {description: "Show the configured models, or choose one for this session", hint: "[model id]", run: (*Server).cmdModel},
		"mode":     {description: "Show the approval modes, or choose one for this session", hint: "[" + strings.Join(session.Modes, " | ") + "]", run: (*Server).cmdMode},
		"undo":     {description: "Undo the file changes of the last turn that changed files", run: (*Server).cmdUndo},
		"help":     {description: "List the commands", run: (*Server).cmdHelp},
	}
}

// commandSet holds the custom commands and watches their folders.
type commandSet struct {
	mu       sync.Mutex
	custom   []commands.Command
	problems []string
	// told is the list last sent in available_commands_update.
	told string

	once    sync.Once
	watcher *fsnotify.Watcher
	watched map[string]bool
	poke    chan struct{}
	done    chan struct{}
	stop    chan struct{}
}

// commandDirs are the commands folders in order of precedence: the
// user's, then the project's. The project is the primary root, the folder
// that folder trust decides about: its commands are read only when it is
// trusted, and other roots' never (nothing says they are trusted).
func (s *Server) commandDirs() []commands.Dir {
	dirs := []commands.Dir{{Path: filepath.Join(s.env.QwenHome, "commands"), Source: commands.SourceUser}}
	if root := s.ws.Roots.Primary(); root != "" && s.ws.Settings.Trust().Trusted {
		dirs = append(dirs, commands.Dir{Path: filepath.Join(root, ".qwen", "commands"), Source: commands.SourceProject})
	}
	return dirs
}

// reloadCommands reads the commands folders again and returns the
// custom commands.
func (s *Server) reloadCommands() []commands.Command {
	cmds, problems := commands.Load(s.commandDirs()...)
	s.cmds.mu.Lock()
	newProblems := slices.DeleteFunc(slices.Clone(problems), func(p string) bool { return slices.Contains(s.cmds.problems, p) })
	s.cmds.custom, s.cmds.problems = cmds, problems
	s.cmds.mu.Unlock()
	for _, p := range newProblems {
		s.log.Warnf("a custom command was left out: %s", p)
	}
	return cmds
}

// commandList is every command, sorted by name: the built-ins, and the
// custom commands whose names no built-in has.
func (s *Server) commandList(reload bool) []commandInfo {
	var custom []commands.Command
	if reload {
		custom = s.reloadCommands()
	} else {
		s.cmds.mu.Lock()
		custom = s.cmds.custom
		s.cmds.mu.Unlock()
	}
	out := make([]commandInfo, 0, len(builtins)+len(custom))
	for name, b := range builtins {
		ci := commandInfo{Name: name, Description: b.description, Source: commands.SourceBuiltin, NeedsModel: b.needsModel}
		if b.hint != "" {
			ci.Input = &commandInput{Hint: b.hint}
		}
		out = append(out, ci)
	}
	for _, c := range custom {
		if _, ok := builtins[c.Name]; ok {
			continue
		}
		ci := commandInfo{Name: c.Name, Description: c.Description, Source: c.Source, NeedsModel: true}
		if c.TakesArgs() {
			ci.Input = &commandInput{Hint: "arguments"}
		}
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// findCustom returns the custom command of that name.
func (s *Server) findCustom(name string) (commands.Command, bool) {
	s.cmds.mu.Lock()
	defer s.cmds.mu.Unlock()
	for _, c := range s.cmds.custom {
		if c.Name == name {
			return c, true
		}
	}
	return commands.Command{}, false
}

// listCommands is qwen/listCommands.
func (s *Server) listCommands(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := optionalParams(req, &p); err != nil {
		return nil, err
	}
	if p.SessionID != "" {
		if _, err := s.sessions.Session(p.SessionID); err != nil {
			return nil, sessionError(err)
		}
	}
	s.watchCommands()
	return map[string]any{"commands": s.commandList(true)}, nil
}

// commandsUpdate is the session update that carries the list.
func (s *Server) commandsUpdate(list []commandInfo) map[string]any {
	if s.opts.ACP {
		acp := make([]acpCommand, len(list))
		for i, c := range list {
			acp[i] = acpCommand{Name: c.Name, Description: c.Description, Input: c.Input}
		}
		return map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": acp}
	}
	return map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": list}
}

// sendSessionUpdate sends an update the session package has no kind for.
func (s *Server) sendSessionUpdate(sessionID string, update map[string]any) {
	if !s.clientCaps().SessionUpdates {
		return
	}
	method := "qwen/sessionUpdate"
	if s.opts.ACP {
		method = "session/update"
	}
	select {
	case <-s.conn.DisconnectNotify():
		return
	default:
	}
	_ = s.stream.notify(method, map[string]any{"sessionId": sessionID, "update": update})
}

// sendCommands tells one session the list (after it was opened).
func (s *Server) sendCommands(sessionID string) {
	s.watchCommands()
	// A session/new may have added a root: watch its folder too.
	s.watchDirs()
	list := s.commandList(true)
	s.cmds.mu.Lock()
	s.cmds.told = commandsKey(list)
	s.cmds.mu.Unlock()
	s.sendSessionUpdate(sessionID, s.commandsUpdate(list))
}

// commandsChanged reads the folders again and, when the list changed,
// tells every open session.
func (s *Server) commandsChanged() {
	// New folders are watched before they are read, so that a file
	// written meanwhile is either read or seen.
	s.watchDirs()
	list := s.commandList(true)
	key := commandsKey(list)
	s.cmds.mu.Lock()
	same := key == s.cmds.told
	s.cmds.told = key
	s.cmds.mu.Unlock()
	if same {
		return
	}
	update := s.commandsUpdate(list)
	ids := s.sessions.OpenIDs()
	sort.Strings(ids)
	for _, id := range ids {
		s.sendSessionUpdate(id, update)
	}
}

func commandsKey(list []commandInfo) string {
	b, _ := json.Marshal(list)
	return string(b)
}

// withCommandsAfter wraps a session-opening method so that the new or
// loaded session is told the commands right after the answer.
func (s *Server) withCommandsAfter(m method, load bool) method {
	inner := m.Handle
	m.Handle = func(ctx context.Context, req *request) (any, error) {
		res, err := inner(ctx, req)
		if err != nil {
			return res, err
		}
		var id string
		if load {
			var p struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(req.Params, &p)
			id = p.SessionID
		} else if mp, ok := res.(map[string]any); ok {
			id, _ = mp["sessionId"].(string)
		}
		if id != "" {
			req.AfterReply(func() { s.sendCommands(id) })
		}
		return res, nil
	}
	return m
}

// commandMethods adds qwen/listCommands (LSP) and wraps the prompt and
// session-opening methods of either protocol.
func (s *Server) commandMethods() {
	s.ws.Settings.OnChange(s.pokeCommands)
	if !s.opts.ACP {
		s.methods["qwen/listCommands"] = method{Handle: s.listCommands}
	}
	// session/resume (ACP) is wrapped when the server has it.
	for name, load := range map[string]bool{"qwen/newSession": false, "qwen/loadSession": true, "session/new": false, "session/load": true, "session/resume": true} {
		if m, ok := s.methods[name]; ok {
			s.methods[name] = s.withCommandsAfter(m, load)
		}
	}
	for _, name := range []string{"qwen/prompt", "session/prompt"} {
		if m, ok := s.methods[name]; ok {
			s.methods[name] = s.withSlashCommands(m)
		}
	}
}

// slashResult is a command's answer when it made no model turn.
type slashResult struct {
	stopReason string
}

// parseSlash splits a prompt's first text block into a command name and
// its arguments. ok is false when the text does not start with "/word".
func parseSlash(blocks []session.ContentBlock) (name, args string, idx int, ok bool) {
	for i, b := range blocks {
		if b.Type != "text" {
			continue
		}
		t := strings.TrimLeft(b.Text, " \t\r\n")
		if !strings.HasPrefix(t, "/") || strings.HasPrefix(t, "//") {
			return "", "", i, false
		}
		t = t[1:]
		end := strings.IndexAny(t, " \t\r\n")
		if end < 0 {
			end = len(t)
		}
		name = t[:end]
		if name == "" || strings.Contains(name, "/") {
			return "", "", i, false
		}
		return name, strings.TrimSpace(t[end:]), i, true
	}
	return "", "", -1, false
}

// withSlashCommands wraps qwen/prompt or session/prompt: a prompt that
// names a command runs it; a built-in that needs no model answers at
// once, a custom command (or /init) becomes the prompt of a normal turn.
func (s *Server) withSlashCommands(m method) method {
	inner := m.Handle
	m.Handle = func(ctx context.Context, req *request) (any, error) {
		var p struct {
			SessionID string                 `json:"sessionId"`
			Prompt    []session.ContentBlock `json:"prompt"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return inner(ctx, req)
		}
		// "//text" sends "/text" to the model.
		for i, b := range p.Prompt {
			if b.Type != "text" {
				continue
			}
			if t := strings.TrimLeft(b.Text, " \t\r\n"); strings.HasPrefix(t, "//") {
				p.Prompt[i].Text = t[1:]
				return inner(ctx, s.withPrompt(req, p.Prompt))
			}
			break
		}
		name, args, idx, ok := parseSlash(p.Prompt)
		if !ok {
			return inner(ctx, req)
		}
		sess, err := s.sessions.Session(p.SessionID)
		if err != nil {
			return inner(ctx, req)
		}
		s.watchCommands()
		s.reloadCommands()
		if b, ok := builtins[name]; ok {
			res, err := b.run(s, ctx, sess, args)
			if err != nil {
				return nil, err
			}
			if res != nil {
				return s.commandAnswer(name, map[string]any{"stopReason": res.stopReason}), nil
			}
			// nil: the command made the prompt (init); run the turn.
			p.Prompt[idx].Text = initPrompt(s.env.MemoryFileName())
			out, err := inner(ctx, s.withPrompt(req, p.Prompt))
			return s.commandAnswer(name, out), err
		}
		c, ok := s.findCustom(name)
		if !ok {
			sess.Say(fmt.Sprintf("Unknown command /%s; sent as text. /help lists commands.\n\n", name))
			return inner(ctx, req)
		}
		text, stop, err := s.expandCustom(ctx, sess, c, args)
		if err != nil {
			return nil, err
		}
		if stop != "" {
			return s.commandAnswer(name, map[string]any{"stopReason": stop}), nil
		}
		p.Prompt[idx].Text = text
		out, err := inner(ctx, s.withPrompt(req, p.Prompt))
		return s.commandAnswer(name, out), err
	}
	return m
}

// withPrompt is req with its prompt replaced.
func (s *Server) withPrompt(req *request, prompt []session.ContentBlock) *request {
	var params map[string]any
	_ = json.Unmarshal(req.Params, &params)
	if params == nil {
		params = map[string]any{}
	}
	params["prompt"] = prompt
	raw, _ := json.Marshal(params)
	r := *req
	r.Params = raw
	return &r
}

// commandAnswer adds the command's name to a prompt's answer: command in
// LSP, _meta.qwen.command in ACP (whose schema has no such field).
func (s *Server) commandAnswer(name string, out any) any {
	m, ok := out.(map[string]any)
	if !ok {
		return out
	}
	if s.opts.ACP {
		m["_meta"] = map[string]any{"qwen": map[string]any{"command": name}}
	} else {
		m["command"] = name
	}
	return m
}

// expandCustom turns a custom command into the text of a prompt: files
// through the workspace (the unsaved buffer's text, inside the roots),
// shell commands through the session's permission flow. stop is set when
// the command ended without a turn (a command was refused or failed, a
// file could not be read: the transcript says why).
func (s *Server) expandCustom(ctx context.Context, sess *session.Session, c commands.Command, args string) (string, string, error) {
	if strings.Contains(c.Prompt, "!{") {
		// Held while the commands run, so that qwen/cancel reaches them
		// and no prompt starts in between; released before the turn.
		cctx, release, err := sess.Claim(ctx)
		if err != nil {
			return "", "", sessionError(err)
		}
		defer release()
		ctx = cctx
	}
	text, err := commands.Expand(ctx, c.Name, c.Prompt, args, commands.Hooks{
		ReadFile: func(p string) (string, error) { return s.commandFile(ctx, sess, p) },
		Shell: func(ctx context.Context, command string) (string, error) {
			run, err := sess.RunTool(ctx, "run_shell_command", map[string]any{"command": command, "description": "for /" + c.Name})
			switch {
			case err != nil:
				return "", err
			case run.Rejected:
				return "", errors.New("the command was not allowed, so nothing was sent to the model")
			case run.Cancelled:
				return "", errors.New("cancelled")
			case run.Failed:
				return "", errors.New(run.Text)
			}
			return session.ShellOutput(command, run.Text), nil
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", session.StopCancelled, nil
		}
		sess.Say(fmt.Sprintf("%v\n", err))
		return "", session.StopEndTurn, nil
	}
	return text, "", nil
}

// commandFile reads @{path} for a custom command: relative to the
// session's folder, inside the workspace roots, from the open buffer when
// there is one. An ACP client that serves reads is asked for its text; a
// refusal is final (the disk is not read behind its back).
func (s *Server) commandFile(ctx context.Context, sess *session.Session, p string) (string, error) {
	if !filepath.IsAbs(p) {
		base := sess.Cwd()
		if base == "" {
			base = s.ws.Roots.Primary()
		}
		p = filepath.Join(base, p)
	}
	clean, _, err := s.ws.Roots.Resolve(p)
	if err != nil {
		return "", fmt.Errorf("%s is not inside the workspace", p)
	}
	if err := s.host.SyncFile(ctx, sess.ID(), clean); err != nil {
		return "", fmt.Errorf("the editor did not give its text: %w", err)
	}
	snap, err := s.ws.ReadText(clean)
	if err != nil {
		return "", err
	}
	return snap.Text, nil
}

// initPrompt asks the model to write the project's memory file.
func initPrompt(name string) string {
	return fmt.Sprintf(`Write a %[1]s file at the root of this project. It is the memory file that coding agents read at the start of every session, so it must help an agent that has never seen the project work in it correctly.

First learn the project with the read-only tools, and read no more than about a dozen files: list the top folder; read the README; then the build or package files (go.mod, package.json, pyproject.toml, Cargo.toml, pom.xml, Makefile and the like), the CI configuration, and a few central source files, choosing each next file by what the last one taught you. Do not guess what you have not read.

Then write %[1]s with write_file (the user reviews it like any edit). Keep it short and concrete, in Markdown.
For a code project:
- what the project is and what it is built with, in two or three sentences;
- how to build it, run it and run its tests, as exact commands (mark a command you could not confirm with TODO);
- how the code is laid out: the main folders and what each holds;
- the conventions the code follows (style, error handling, naming, testing) and anything an agent must not do.
For a folder that is not code (notes, documents, data): what it holds and what for, its most important files, and how it is meant to be used.

Change no other file. When the file is written, say in one or two sentences what it covers.`, name)
}

func (s *Server) cmdHelp(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	var b strings.Builder
	b.WriteString("**Commands** (type `/name`; `//text` sends text that starts with a slash):\n\n")
	for _, c := range s.commandList(false) {
		fmt.Fprintf(&b, "- `/%s", c.Name)
		if c.Input != nil {
			hint := c.Input.Hint
			if !strings.HasPrefix(hint, "[") && !strings.Contains(hint, "|") {
				hint = "<" + hint + ">"
			}
			fmt.Fprintf(&b, " %s", hint)
		}
		fmt.Fprintf(&b, "` — %s", c.Description)
		if c.Source != commands.SourceBuiltin {
			fmt.Fprintf(&b, " _(%s)_", c.Source)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nCustom commands are TOML files in `%s` and, in a trusted folder, the project's `.qwen/commands/` (of the first workspace folder).\n", filepath.Join(s.env.QwenHome, "commands"))
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdStats(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	st := sess.Stats()
	var b strings.Builder
	b.WriteString("**Session statistics**\n\n")
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Session age | %s |\n", roundDur(time.Since(st.Started)))
	fmt.Fprintf(&b, "| Turns | %d (%s working) |\n", st.Turns, roundDur(st.TurnTime))
	fmt.Fprintf(&b, "| Model requests | %d (%s waiting on the model) |\n", st.ModelRequests, roundDur(st.ModelTime))
	fmt.Fprintf(&b, "| Input tokens | %d |\n", st.InputTokens)
	cache := "0"
	if st.InputTokens > 0 {
		cache = fmt.Sprintf("%d (%.1f%% of input)", st.CachedTokens, 100*float64(st.CachedTokens)/float64(st.InputTokens))
	}
	fmt.Fprintf(&b, "| Cache hits | %s |\n", cache)
	fmt.Fprintf(&b, "| Output tokens | %d |\n", st.OutputTokens)
	fmt.Fprintf(&b, "| Total tokens | %d |\n", max(st.TotalTokens, st.InputTokens+st.OutputTokens))
	fmt.Fprintf(&b, "| Tool calls | %d: %d succeeded, %d failed, %d rejected, %d cancelled |\n", st.ToolCalls, st.ToolsSucceeded, st.ToolsFailed, st.ToolsRejected, st.ToolsCancelled)
	fmt.Fprintf(&b, "| Conversation | %d messages, about %d tokens per request |\n", st.HistoryMessages, st.ContextTokens)
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func (s *Server) cmdClear(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	res, err := sess.Clear()
	if err != nil {
		return nil, sessionError(err)
	}
	if !s.opts.ACP {
		s.sendSessionUpdate(sess.ID(), map[string]any{"sessionUpdate": "history_cleared"})
	}
	msg := "The conversation was cleared; the next prompt starts a new one.\n"
	if res.StoredID != "" {
		msg = fmt.Sprintf("The conversation was cleared; the next prompt starts a new one. The earlier conversation (%d messages) is kept as session `%s` in the session list.\n", res.Messages, res.StoredID)
	}
	sess.Say(msg)
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdCompress(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	if err := s.sessions.CheckModel(); err != nil {
		return nil, sessionError(err)
	}
	cctx, release, err := sess.Claim(ctx)
	if err != nil {
		return nil, sessionError(err)
	}
	defer release()
	res, err := sess.Compress(cctx)
	if err != nil {
		if cctx.Err() != nil {
			return &slashResult{stopReason: session.StopCancelled}, nil
		}
		return nil, sessionError(err)
	}
	if res.Summarised == 0 {
		sess.Say("There is nothing to compress yet: the conversation is only its latest exchange.\n")
	} else {
		sess.Say(fmt.Sprintf("The conversation was compressed: %d messages were replaced by a summary; a request now takes about %d tokens (%d before).\n", res.Summarised, res.After, res.Before))
	}
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdInit(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	name := s.env.MemoryFileName()
	root := s.ws.Roots.Primary()
	if root == "" {
		root = sess.Cwd()
	}
	if root == "" {
		sess.Say("/init needs a workspace folder.\n")
		return &slashResult{stopReason: session.StopEndTurn}, nil
	}
	path := filepath.Join(root, name)
	if args == "overwrite" {
		return nil, nil
	}
	if snap, err := s.ws.ReadText(path); err == nil && strings.TrimSpace(snap.Text) != "" {
		sess.Say(fmt.Sprintf("%s already exists and is not empty, so /init left it alone. `/init overwrite` writes it anew (you review the change before it is applied).\n", path))
		return &slashResult{stopReason: session.StopEndTurn}, nil
	}
	return nil, nil
}

func (s *Server) cmdMemory(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	verb, rest, _ := strings.Cut(args, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "", "show":
		mem := s.sessions.Memory()
		if strings.TrimSpace(mem) == "" {
			sess.Say(fmt.Sprintf("No memory files hold anything. `/memory add <text>` adds a fact to %s.\n", filepath.Join(s.env.QwenHome, s.env.MemoryFileName())))
		} else {
			sess.Say("**Memory**\n\n```\n" + strings.ReplaceAll(mem, "```", "``\u200b`") + "```\n")
		}
	case "add":
		if rest == "" {
			sess.Say("Usage: `/memory add <text>`\n")
			break
		}
		cctx, release, err := sess.Claim(ctx)
		if err != nil {
			return nil, sessionError(err)
		}
		run, err := sess.RunTool(cctx, "save_memory", map[string]any{"fact": rest})
		release()
		switch {
		case err != nil:
			return nil, err
		case run.Cancelled:
			return &slashResult{stopReason: session.StopCancelled}, nil
		case run.Rejected:
			sess.Say("Nothing was saved.\n")
		case run.Failed:
			sess.Say(fmt.Sprintf("The fact was not saved: %s\n", run.Text))
		default:
			sess.RefreshMemory()
			sess.Say(run.Text + "\n")
		}
	case "refresh":
		_, release, err := sess.Claim(ctx)
		if err != nil {
			return nil, sessionError(err)
		}
		mem := sess.RefreshMemory()
		release()
		n := strings.Count(mem, "--- Memory file ")
		sess.Say(fmt.Sprintf("The memory files were read again (%d with content); the next request uses them.\n", n))
	default:
		sess.Say("Usage: `/memory show`, `/memory add <text>` or `/memory refresh`.\n")
	}
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdTools(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	infos := s.registry.Snapshot().Infos()
	var b strings.Builder
	fmt.Fprintf(&b, "**Tools** (%d):\n\n", len(infos))
	for _, in := range infos {
		fmt.Fprintf(&b, "- `%s`", in.Name)
		if in.Source != "" && in.Source != "builtin" {
			fmt.Fprintf(&b, " _(%s)_", in.Source)
		}
		fmt.Fprintf(&b, " — %s\n", firstLine(in.Description))
	}
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdMCP(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	servers := s.sources.Servers()
	var b strings.Builder
	if len(servers) == 0 {
		b.WriteString("No MCP servers are configured (mcpServers in the settings).\n")
		sess.Say(b.String())
		return &slashResult{stopReason: session.StopEndTurn}, nil
	}
	infos := s.registry.Snapshot().Infos()
	b.WriteString("**MCP servers**\n\n")
	for _, sv := range servers {
		fmt.Fprintf(&b, "- **%s**: %s", sv.Alias, sv.Status)
		if sv.Error != "" {
			fmt.Fprintf(&b, " (%s)", firstLine(sv.Error))
		}
		var names []string
		for _, in := range infos {
			if in.Source == "mcp:"+sv.Alias {
				names = append(names, "`"+in.Name+"`")
			}
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "; tools: %s", strings.Join(names, ", "))
		}
		b.WriteString("\n")
	}
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdModel(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	if args != "" {
		if err := s.chooseModel(sess.ID(), args); err != nil {
			sess.Say(fmt.Sprintf("The model was not changed: %s\n", errorMessage(err)))
		} else {
			sess.Say(fmt.Sprintf("This session now uses the model `%s`.\n", args))
		}
		return &slashResult{stopReason: session.StopEndTurn}, nil
	}
	models, current, err := s.modelChoices(sess.ID())
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if len(models) == 0 {
		name := s.sessions.ModelName()
		if name == "" {
			name = "none configured"
		}
		fmt.Fprintf(&b, "The model is `%s`. Configure more in the settings' modelProviders to choose among them with `/model <id>`.\n", name)
	} else {
		b.WriteString("**Models** (`/model <id>` chooses one for this session):\n\n")
		for _, m := range models {
			mark := ""
			if m.ID == current {
				mark = " **(current)**"
			}
			fmt.Fprintf(&b, "- `%s`%s", m.ID, mark)
			if m.Description != "" {
				fmt.Fprintf(&b, " — %s", m.Description)
			}
			b.WriteString("\n")
		}
	}
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdMode(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	if args != "" {
		if _, err := s.setMode(sess.ID(), args); err != nil {
			sess.Say(fmt.Sprintf("The approval mode was not changed: %s\n", errorMessage(err)))
		} else {
			sess.Say(fmt.Sprintf("The approval mode is now `%s`.\n", args))
		}
		return &slashResult{stopReason: session.StopEndTurn}, nil
	}
	current := sess.Mode()
	var b strings.Builder
	b.WriteString("**Approval modes** (`/mode <mode>` chooses one):\n\n")
	for _, m := range session.Modes {
		mark := ""
		if m == current {
			mark = " **(current)**"
		}
		fmt.Fprintf(&b, "- `%s`%s\n", m, mark)
	}
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

func (s *Server) cmdUndo(ctx context.Context, sess *session.Session, args string) (*slashResult, error) {
	res, err := sess.RevertTurn(ctx, 0)
	if err != nil && res.Turn == 0 {
		if errors.Is(err, session.ErrNothingToRevert) {
			sess.Say("Nothing to undo: no turn of this session changed files that has not been undone already.\n")
			return &slashResult{stopReason: session.StopEndTurn}, nil
		}
		return nil, sessionError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Undid the file changes of turn %d.", res.Turn)
	for _, f := range res.Restored {
		fmt.Fprintf(&b, "\n- restored `%s`", s.env.Rel(f))
	}
	for _, f := range res.Removed {
		fmt.Fprintf(&b, "\n- removed `%s`", s.env.Rel(f))
	}
	for _, c := range res.Conflicts {
		fmt.Fprintf(&b, "\n- left `%s` alone: it changed since the turn", s.env.Rel(c.Path))
	}
	if err != nil {
		fmt.Fprintf(&b, "\n\n%s", err.Error())
	}
	b.WriteString("\n")
	sess.Say(b.String())
	return &slashResult{stopReason: session.StopEndTurn}, nil
}

// errorMessage is an error's text for the transcript.
func errorMessage(err error) string {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je.Message
	}
	return err.Error()
}

// watchCommands starts watching the commands folders, once.
func (s *Server) watchCommands() {
	s.cmds.once.Do(func() {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			s.log.Warnf("custom commands will not be reloaded when their files change: %v", err)
			return
		}
		poke, stop, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		s.cmds.mu.Lock()
		s.cmds.watcher = w
		s.cmds.watched = map[string]bool{}
		s.cmds.poke, s.cmds.stop, s.cmds.done = poke, stop, done
		s.cmds.mu.Unlock()
		s.watchDirs()
		go s.commandWatchLoop(w, poke, stop, done)
	})
}

// watchDirs adds the commands folders and their subfolders to the
// watcher, or the nearest existing parent of a folder not made yet.
func (s *Server) watchDirs() {
	s.cmds.mu.Lock()
	w := s.cmds.watcher
	s.cmds.mu.Unlock()
	if w == nil {
		return
	}
	add := func(dir string) {
		s.cmds.mu.Lock()
		seen := s.cmds.watched[dir]
		s.cmds.watched[dir] = true
		s.cmds.mu.Unlock()
		if !seen {
			if err := w.Add(dir); err != nil {
				s.cmds.mu.Lock()
				delete(s.cmds.watched, dir)
				s.cmds.mu.Unlock()
			}
		}
	}
	dirs := []string{filepath.Join(s.env.QwenHome, "commands")}
	if root := s.ws.Roots.Primary(); root != "" {
		dirs = append(dirs, filepath.Join(root, ".qwen", "commands"))
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() {
			// Watch the parents that exist, so that the folder's
			// creation is seen.
			for p := filepath.Dir(d); ; p = filepath.Dir(p) {
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					add(p)
					break
				}
				if p == filepath.Dir(p) {
					break
				}
			}
			continue
		}
		n := 0
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil || !de.IsDir() {
				return nil
			}
			if n++; n > 200 {
				return filepath.SkipAll
			}
			add(p)
			return nil
		})
	}
}

// pokeCommands asks the watch loop to read the folders again (settings
// or trust changed). It never blocks.
func (s *Server) pokeCommands() {
	s.cmds.mu.Lock()
	poke := s.cmds.poke
	s.cmds.mu.Unlock()
	if poke == nil {
		return
	}
	select {
	case poke <- struct{}{}:
	default:
	}
}

// commandDebounce gathers the events of one save (editors write, rename
// and chmod) into one reload.
const commandDebounce = 150 * time.Millisecond

func (s *Server) commandWatchLoop(w *fsnotify.Watcher, poke, stop <-chan struct{}, done chan struct{}) {
	defer close(done)
	defer w.Close()
	var timer *time.Timer
	var fire <-chan time.Time
	arm := func() {
		if timer == nil {
			timer = time.NewTimer(commandDebounce)
		} else {
			timer.Reset(commandDebounce)
		}
		fire = timer.C
	}
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if relevantCommandEvent(ev.Name) {
				arm()
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		case <-poke:
			arm()
		case <-fire:
			fire = nil
			s.commandsChanged()
		}
	}
}

// relevantCommandEvent reports whether a change at path may change the
// commands: a TOML file, or a folder on the way to a commands folder.
func relevantCommandEvent(path string) bool {
	base := filepath.Base(path)
	return strings.HasSuffix(base, ".toml") || base == "commands" || base == ".qwen" || !strings.Contains(base, ".") ||
		strings.Contains(filepath.ToSlash(path), "/commands/")
}

// closeCommands stops the watcher and waits for its loop.
func (s *Server) closeCommands() {
	s.cmds.mu.Lock()
	stop, done := s.cmds.stop, s.cmds.done
	s.cmds.stop = nil
	s.cmds.mu.Unlock()
	if stop == nil {
		// Never started: make sure it never starts.
		s.cmds.once.Do(func() {})
		return
	}
	close(stop)
	<-done
}
