package shellsafe

import "sync"

// lazy is a value built on its first use rather than by the package's
// initialiser, which every start of the server runs: the tables of the
// shell analysis are not needed until a command is judged, and building
// them at start-up is memory an idle server keeps (docs/benchmarks.md,
// "Idle memory"). A lazy declared at package level with a func literal
// that captures nothing needs no initialiser of its own.
type lazy[T any] struct {
	once  sync.Once
	build func() T
	v     T
}

func (l *lazy[T]) get() T {
	l.once.Do(func() { l.v = l.build() })
	return l.v
}
