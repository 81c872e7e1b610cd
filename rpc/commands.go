package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/commands"
)

// Slash commands (docs/protocol.md "Slash commands"): the built-ins, and
// custom commands from ~/.qwen/commands and (in a trusted folder) the
// primary root's .qwen/commands. A prompt that starts with "/name" runs the
// command; qwen/listCommands lists them, and available_commands_update
// tells each open session when the list changes.
//
// This file is their plumbing: the table of built-ins, the list and its
// updates, parsing a prompt's "/name args", dispatching it, and expanding
// a custom command. What each built-in does is in commandbuiltins.go;
// watching the custom commands' folders is in commandwatch.go.

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
			typed := p.Prompt[idx].Text
			p.Prompt[idx].Text = initPrompt(s.env.MemoryFileName())
			out, err := inner(ctx, s.withTyped(s.withPrompt(req, p.Prompt), typed))
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
		typed := p.Prompt[idx].Text
		p.Prompt[idx].Text = text
		out, err := inner(ctx, s.withTyped(s.withPrompt(req, p.Prompt), typed))
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

// withTyped marks req's prompt as one the person typed as typed: the
// session shows typed, not the expansion, in its title and replays.
func (s *Server) withTyped(req *request, typed string) *request {
	req.typed = strings.TrimSpace(typed)
	return req
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
