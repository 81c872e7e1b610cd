package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/diff"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// ErrNothingToRevert: -32602.
var ErrNothingToRevert = errors.New("nothing to undo")

// RevertResult is what qwen/revertTurn did.
type RevertResult struct {
	Turn int
	// Restored files got their content from before the turn back;
	// Removed files had been created by the turn.
	Restored, Removed []string
	Conflicts         []RevertConflict
}

// RevertConflict is a file changed since the turn left it: it is left
// alone. Diff goes from what the turn left to what the file holds now.
type RevertConflict struct {
	Path string
	Diff string
}

// turnChange is one file's state before a turn and after it.
type turnChange struct {
	path          string
	before, after string
	perm          uint32
}

// RevertTurn puts back every file that turn (0: the latest turn not yet
// undone that changed files) changed: open buffers through the editor, one
// undoable edit per file; closed files on disk, atomically. A file that
// no longer holds what the turn left is a conflict and is not touched.
func (s *Session) RevertTurn(ctx context.Context, turn int) (RevertResult, error) {
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return RevertResult{}, ErrBusy
	}
	turn, err := s.revertTarget(turn)
	if err != nil {
		s.mu.Unlock()
		return RevertResult{}, err
	}
	// Hold the session as busy so that no prompt starts while files are
	// put back.
	s.busy = true
	changes := map[string]*turnChange{}
	var order []string
	for _, c := range s.checkpoints {
		if c.Turn != turn {
			continue
		}
		for _, f := range c.Files {
			tc, ok := changes[f.Path]
			if !ok {
				tc = &turnChange{path: f.Path, before: f.Before, perm: f.Perm}
				changes[f.Path] = tc
				order = append(order, f.Path)
			}
			tc.after = f.After
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
	}()

	sort.Strings(order)
	res := RevertResult{Turn: turn}
	objs := s.objects()
	var failures []string
	for _, p := range order {
		tc := changes[p]
		if tc.before == tc.after {
			continue
		}
		if err := s.revertFile(ctx, objs, tc, &res); err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", s.mgr.opts.Env.Rel(p), err))
		}
	}
	s.mu.Lock()
	if s.reverted == nil {
		s.reverted = map[int]bool{}
	}
	s.reverted[turn] = true
	s.notes = append(s.notes, revertNote(s.mgr.opts.Env, res))
	s.mu.Unlock()
	s.record(event{Type: "reverted", Turn: turn})
	s.markUndone(turn)
	if len(failures) > 0 {
		return res, fmt.Errorf("some files of turn %d could not be put back: %s", turn, strings.Join(failures, "; "))
	}
	return res, nil
}

// revertTarget is the turn RevertTurn undoes when asked for turn (0: the
// latest turn not yet undone that changed files). The caller holds s.mu.
func (s *Session) revertTarget(turn int) (int, error) {
	switch {
	case turn <= 0:
		turn = 0
		for _, c := range s.checkpoints {
			if !s.reverted[c.Turn] {
				turn = max(turn, c.Turn)
			}
		}
		if turn == 0 {
			return 0, fmt.Errorf("%w: no turn of this session changed files that has not been undone already", ErrNothingToRevert)
		}
	case turn > s.turns:
		return 0, fmt.Errorf("%w: the session has %d turns, so there is no turn %d", ErrNothingToRevert, s.turns, turn)
	case s.reverted[turn]:
		return 0, fmt.Errorf("%w: turn %d was undone already", ErrNothingToRevert, turn)
	}
	return turn, nil
}

func (s *Session) revertFile(ctx context.Context, objs *objectStore, tc *turnChange, res *RevertResult) error {
	now := s.readState(tc.path)
	var after []byte
	if tc.after != "" {
		b, err := objs.get(tc.after)
		if err != nil {
			return err
		}
		after = b
	}
	if now.exists != (tc.after != "") || string(now.data) != string(after) {
		res.Conflicts = append(res.Conflicts, RevertConflict{Path: tc.path, Diff: conflictDiff(s.mgr.opts.Env, tc.path, tc.after != "", after, now)})
		return nil
	}
	if tc.before == "" {
		// The turn created the file.
		if err := os.Remove(tc.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove: %w", err)
		}
		res.Removed = append(res.Removed, tc.path)
		return nil
	}
	before, err := objs.get(tc.before)
	if err != nil {
		return err
	}
	if now.buffer {
		host := s.host()
		if host.CanApplyToBuffers() {
			if err := host.ApplyToBuffer(ctx, tc.path, now.version, string(before)); err != nil {
				return err
			}
			res.Restored = append(res.Restored, tc.path)
			return nil
		}
	}
	perm := os.FileMode(tc.perm)
	if perm == 0 {
		perm = 0o644
	}
	if err := workspace.WriteFileAtomic(tc.path, before, perm); err != nil {
		return err
	}
	res.Restored = append(res.Restored, tc.path)
	return nil
}

// conflictDiff shows what changed since the turn left the file.
func conflictDiff(env *tools.Env, path string, existed bool, after []byte, now fileState) string {
	rel := env.Rel(path)
	switch {
	case !now.exists:
		return fmt.Sprintf("%s was deleted after the agent's turn", rel)
	case !existed:
		return diff.Unified(rel, "after the agent (absent)", "now", "", string(now.data))
	}
	return diff.Unified(rel, "after the agent", "now", string(after), string(now.data))
}

// revertNote tells the model, with the next prompt, what the user undid.
func revertNote(env *tools.Env, r RevertResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The user undid the file changes of turn %d.", r.Turn)
	list := func(what string, paths []string) {
		if len(paths) == 0 {
			return
		}
		rel := make([]string, len(paths))
		for i, p := range paths {
			rel[i] = env.Rel(p)
		}
		fmt.Fprintf(&b, " %s: %s.", what, strings.Join(rel, ", "))
	}
	list("Restored to their earlier content", r.Restored)
	list("Removed (the turn had created them)", r.Removed)
	var kept []string
	for _, c := range r.Conflicts {
		kept = append(kept, c.Path)
	}
	list("Left as they are, since the user changed them afterwards", kept)
	b.WriteString(" Read files again before editing them.")
	return b.String()
}

// takeNotes returns and clears the notes for the next prompt.
func (s *Session) takeNotes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notes
	s.notes = nil
	return n
}
