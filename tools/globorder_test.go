package tools

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// firstGlobHits must list exactly what sorting every hit and cutting at k
// lists, whatever the mix of recent and old files, ties and k.
func TestFirstGlobHitsMatchesAFullSort(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := rng.IntN(400)
		hits := make([]globHit, n)
		for i := range hits {
			// Times within two days of start, on a coarse grid so that
			// equal times (ties broken by path) are common.
			age := time.Duration(rng.IntN(48)) * time.Hour
			// Paths are unique, as find makes them; their order is random.
			hits[i] = globHit{path: fmt.Sprintf("/w/d%d/f%03d.go", rng.IntN(5), i), mtime: start.Add(-age)}
		}
		rng.Shuffle(len(hits), func(i, j int) { hits[i], hits[j] = hits[j], hits[i] })
		k := 1 + rng.IntN(120)
		want := slices.Clone(hits)
		slices.SortFunc(want, globOrder(start))
		want = want[:min(k, len(want))]
		got := firstGlobHits(slices.Clone(hits), start, k)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (n=%d, k=%d):\n got %v\nwant %v", trial, n, k, got, want)
		}
	}
}

func TestGlobOrder(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	hits := []globHit{
		{"/w/old-b", start.Add(-72 * time.Hour)},
		{"/w/new-late", start.Add(-1 * time.Hour)},
		{"/w/old-a", start.Add(-30 * time.Hour)},
		{"/w/new-b", start.Add(-5 * time.Hour)},
		{"/w/new-a", start.Add(-5 * time.Hour)},
	}
	got := firstGlobHits(hits, start, 10)
	var paths []string
	for _, h := range got {
		paths = append(paths, h.path)
	}
	want := []string{"/w/new-late", "/w/new-a", "/w/new-b", "/w/old-a", "/w/old-b"}
	if !slices.Equal(paths, want) {
		t.Errorf("got %v, want %v", paths, want)
	}
}
