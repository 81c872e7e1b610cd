// Package lazy holds values built on their first use rather than by a
// package's initialiser, which every start of the server runs: what only
// some requests need (a table, a compiled expression) is then not memory
// an idle server keeps (docs/benchmarks.md, "Idle memory"). Declared at
// package level with a func literal that captures nothing, a Value needs
// no initialiser of its own.
package lazy

import (
	"regexp"
	"sync"
)

// Value is a T built by Build on the first Get.
type Value[T any] struct {
	once  sync.Once
	Build func() T
	v     T
}

// Get builds the value the first time and returns it.
func (l *Value[T]) Get() T {
	l.once.Do(func() { l.v = l.Build() })
	return l.v
}

// Regexp is a regular expression compiled on its first Get.
type Regexp struct {
	Expr string
	once sync.Once
	re   *regexp.Regexp
}

// Get compiles the expression the first time and returns it.
func (l *Regexp) Get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.Expr) })
	return l.re
}
