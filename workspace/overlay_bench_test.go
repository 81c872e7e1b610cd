package workspace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchSource builds about size bytes of Go-like source: indented code,
// string literals, and now and then a comment in Chinese with an emoji. It
// returns the text and, per line, its length in UTF-16 units and whether it
// is pure ASCII.
func benchSource(size int) (string, []int, []bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	idents := []string{"ctx", "buf", "req", "resp", "err", "n", "offset", "line", "path", "workspace"}
	var sb strings.Builder
	var units []int
	var ascii []bool
	for sb.Len() < size {
		var line string
		indent := strings.Repeat("\t", rng.IntN(4))
		a, b := idents[rng.IntN(len(idents))], idents[rng.IntN(len(idents))]
		switch rng.IntN(8) {
		case 0:
			line = fmt.Sprintf("%s// %s 处理缓冲区的变更 ✅ 😀 %d", indent, a, rng.IntN(1000))
		case 1:
			line = fmt.Sprintf("%sif %s != nil {", indent, b)
		case 2:
			line = fmt.Sprintf("%sreturn fmt.Errorf(\"read %%s: %%w\", %s, %s)", indent, a, b)
		case 3:
			line = ""
		case 4:
			line = indent + "}"
		default:
			line = fmt.Sprintf("%s%s, %s := %s.Next(%s, %d)", indent, a, b, a, b, rng.IntN(100))
		}
		sb.WriteString(line)
		sb.WriteByte('\n')
		isASCII := true
		for i := 0; i < len(line); i++ {
			if line[i] >= utf8.RuneSelf {
				isASCII = false
			}
		}
		units = append(units, measureText(line).units)
		ascii = append(ascii, isASCII)
	}
	units = append(units, 0) // the empty line after the final "\n"
	ascii = append(ascii, true)
	return sb.String(), units, ascii
}

// benchEdits makes n single-character edits at lines scattered through the
// text, as a user typing and deleting all over a file would: mostly
// insertions, some deletions. Each edit is valid for the text the edits
// before it leave.
func benchEdits(n int, units []int, ascii []bool) []Change {
	rng := rand.New(rand.NewPCG(3, 4))
	units = append([]int(nil), units...)
	edits := make([]Change, 0, n)
	for len(edits) < n {
		line := rng.IntN(len(units))
		if rng.IntN(4) == 0 && ascii[line] && units[line] > 0 {
			ch := rng.IntN(units[line])
			edits = append(edits, Change{Range: &Range{Position{line, ch}, Position{line, ch + 1}}})
			units[line]--
			continue
		}
		ch := units[line]
		if ascii[line] {
			ch = rng.IntN(units[line] + 1)
		}
		edits = append(edits, Change{Range: &Range{Position{line, ch}, Position{line, ch}}, Text: string(rune('a' + rng.IntN(26)))})
		units[line]++
	}
	return edits
}

// BenchmarkOverlayIncrementalEdits applies 10,000 single-character edits,
// in UTF-16 positions at scattered lines, to a 5 MB buffer, one didChange
// each.
func BenchmarkOverlayIncrementalEdits(b *testing.B) {
	const n = 10_000
	text, units, ascii := benchSource(5 << 20)
	edits := benchEdits(n, units, ascii)
	o := newOverlay()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		o.Open("/bench.go", 0, text)
		b.StartTimer()
		for v, e := range edits {
			if err := o.Apply("/bench.go", int32(v+1), []Change{e}, UTF16); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "edits/s")
	// A cheap sanity check that the edits landed.
	inserted := 0
	for _, e := range edits {
		if e.Text != "" {
			inserted++
		} else {
			inserted--
		}
	}
	if got, _ := o.Len("/bench.go"); got != len(text)+inserted {
		b.Fatalf("buffer is %d bytes, want %d", got, len(text)+inserted)
	}
}

// BenchmarkOverlayEditThenGet is an edit followed by a reader asking for the
// whole 5 MB text, the worst case for the lazily built snapshot.
func BenchmarkOverlayEditThenGet(b *testing.B) {
	text, units, ascii := benchSource(5 << 20)
	edits := benchEdits(1000, units, ascii)
	o := newOverlay()
	o.Open("/bench.go", 0, text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(edits) == 0 {
			b.StopTimer()
			o.Open("/bench.go", 0, text)
			b.StartTimer()
		}
		if err := o.Apply("/bench.go", int32(i+1), edits[i%len(edits):i%len(edits)+1], UTF16); err != nil {
			b.Fatal(err)
		}
		if buf, _ := o.Get("/bench.go"); len(buf.Text) < len(text)/2 {
			b.Fatal("short text")
		}
	}
}

// BenchmarkOverlayOffset converts scattered UTF-16 positions in a 5 MB
// buffer through the rope; BenchmarkOffsetOfString does the same on the
// plain string for comparison.
func BenchmarkOverlayOffset(b *testing.B) {
	text, units, _ := benchSource(5 << 20)
	o := newOverlay()
	o.Open("/bench.go", 0, text)
	pos := benchPositions(units)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Offset("/bench.go", pos[i%len(pos)], UTF16); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOffsetOfString(b *testing.B) {
	text, units, _ := benchSource(5 << 20)
	pos := benchPositions(units)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := OffsetOf(text, pos[i%len(pos)], UTF16); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPositions(units []int) []Position {
	rng := rand.New(rand.NewPCG(5, 6))
	pos := make([]Position, 1024)
	for i := range pos {
		line := rng.IntN(len(units))
		pos[i] = Position{line, units[line]}
	}
	return pos
}

// BenchmarkOverlayOpen loads a 5 MB buffer (builds its rope).
func BenchmarkOverlayOpen(b *testing.B) {
	text, _, _ := benchSource(5 << 20)
	o := newOverlay()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o.Open("/bench.go", 0, text)
	}
}
