package rpc

// The built-in slash commands, one method each: what /help, /stats,
// /clear, /compress, /init, /memory, /tools, /mcp, /model, /mode and
// /undo do once the prompt has been recognised as one of them. The table
// that names them (builtins) and the dispatch that calls them are in
// commands.go.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/commands"
)

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
