package session

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
)

// How many session files a server keeps open. A session's file is open
// (and flocked) only while it is among the maxOpenSessionFiles most
// recently written ones: the others are closed between writes, and the
// next event opens and locks the file again. A server with hundreds of
// sessions therefore holds at most this many descriptors for them, well
// under a 64-file limit, and the sessions in use now keep their lock.
//
// While a session's file is closed, another process could load the
// session and append to it. Reopening compares the file's size with the
// size it had when it was closed: when it grew, the session has gone on
// elsewhere and this process stops writing it (the session goes on in
// memory), rather than forking its history inside one file.
const maxOpenSessionFiles = 16

// openFiles is the store's list of open session files, most recently
// written first. The zero value is ready to use.
type openFiles struct {
	mu  sync.Mutex
	lru list.List
	at  map[*sessionLog]*list.Element
}

// keepOpen marks l as just written, and closes the files that fall off the
// end of the list. It must be called without l.mu held: closing another
// log takes that log's lock.
func (st *Store) keepOpen(l *sessionLog) {
	l.mu.Lock()
	open := l.f != nil
	l.mu.Unlock()
	if !open {
		return
	}
	o := &st.files
	o.mu.Lock()
	if o.at == nil {
		o.at = map[*sessionLog]*list.Element{}
	}
	if e, ok := o.at[l]; ok {
		o.lru.MoveToFront(e)
	} else {
		o.at[l] = o.lru.PushFront(l)
	}
	limit := maxOpenSessionFiles
	var victims []*sessionLog
	for o.lru.Len() > limit {
		e := o.lru.Back()
		v := o.lru.Remove(e).(*sessionLog)
		delete(o.at, v)
		victims = append(victims, v)
	}
	o.mu.Unlock()
	for _, v := range victims {
		v.suspend()
	}
}

// forget drops l from the list (its session was closed).
func (st *Store) forget(l *sessionLog) {
	o := &st.files
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.at[l]; ok {
		o.lru.Remove(e)
		delete(o.at, l)
	}
}

// suspend closes the file of a log that stays in use, remembering its size
// so that resume can tell whether someone else wrote to it meanwhile.
func (l *sessionLog) suspend() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if fi, err := l.f.Stat(); err == nil {
		l.suspendedSize = fi.Size()
	} else {
		l.suspendedSize = -1
	}
	l.f.Close()
	l.f = nil
	l.suspended = true
}

// resumeLocked reopens and relocks a suspended log's file before a write;
// l.mu is held. A log closed for good stays closed.
func (l *sessionLog) resumeLocked() error {
	if l.f != nil {
		return nil
	}
	if !l.suspended {
		return errors.New("the session file is closed")
	}
	fresh, err := l.st.reopen(l.path)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", l.path, err)
	}
	fi, err := fresh.f.Stat()
	if err != nil || l.suspendedSize < 0 || fi.Size() != l.suspendedSize {
		fresh.close()
		// Stay suspended with the size that was ours, so every later
		// write is refused the same way.
		return fmt.Errorf("%s was written by another process while this one had it closed (the session was loaded elsewhere); this process no longer writes it", l.path)
	}
	l.f, l.needNewline, l.suspended = fresh.f, fresh.needNewline, false
	return nil
}
