package rpc

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Level is a log level; the values are LSP's MessageType numbers.
type Level int

const (
	LevelError Level = 1
	LevelWarn  Level = 2
	LevelInfo  Level = 3
	LevelDebug Level = 4
)

func (l Level) String() string {
	switch l {
	case LevelError:
		return "error"
	case LevelWarn:
		return "warn"
	case LevelInfo:
		return "info"
	}
	return "debug"
}

// logger writes every line to stderr and, once the editor is initialized,
// info and above as window/logMessage. Secrets are scrubbed first.
type logger struct {
	mu  sync.Mutex
	out io.Writer
	// outLevel is the least severe level written to out; zero is all.
	outLevel Level
	// toEditor is set once the connection can carry window/logMessage.
	toEditor func(Level, string)
	// scrub, when set, removes secrets (the configured ones as well as
	// those scrubSecrets recognises); it is set before the server starts.
	scrub func(string) string
}

func (l *logger) setEditor(f func(Level, string)) {
	l.mu.Lock()
	l.toEditor = f
	l.mu.Unlock()
}

func (l *logger) logf(level Level, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.scrub != nil {
		msg = l.scrub(msg)
	} else {
		msg = scrubSecrets(msg)
	}
	l.mu.Lock()
	out, editor := l.out, l.toEditor
	if out != nil && (l.outLevel == 0 || level <= l.outLevel) {
		fmt.Fprintf(out, "%s [%s] %s\n", time.Now().Format("15:04:05.000"), level, msg)
	}
	l.mu.Unlock()
	if editor != nil && level <= LevelInfo {
		editor(level, msg)
	}
}

func (l *logger) Errorf(format string, args ...any) { l.logf(LevelError, format, args...) }
func (l *logger) Warnf(format string, args ...any)  { l.logf(LevelWarn, format, args...) }
func (l *logger) Infof(format string, args ...any)  { l.logf(LevelInfo, format, args...) }
func (l *logger) Debugf(format string, args ...any) { l.logf(LevelDebug, format, args...) }
