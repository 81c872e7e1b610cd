package tools

import (
	"regexp"
	"sync"
)

// lazy is a value built on its first use rather than by the package's
// initialiser, which every start of the server runs: what only some
// requests need (a table, a compiled expression) is then not memory an
// idle server keeps (docs/benchmarks.md, "Idle memory"). Declared at
// package level with a func literal that captures nothing, a lazy needs
// no initialiser of its own.
type lazy[T any] struct {
	once  sync.Once
	build func() T
	v     T
}

func (l *lazy[T]) get() T {
	l.once.Do(func() { l.v = l.build() })
	return l.v
}

// lazyRegexp is a regular expression compiled on its first use, as lazy.
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}
