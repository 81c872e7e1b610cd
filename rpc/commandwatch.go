package rpc

// Watching the custom commands' folders: an fsnotify watcher on the
// user's and the project's commands folders, debounced, that reloads the
// commands and tells the open sessions when the list changed
// (commandsChanged in commands.go).

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

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
