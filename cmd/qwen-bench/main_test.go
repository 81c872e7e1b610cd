package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func TestParseBenchOutput(t *testing.T) {
	out := `goos: linux
BenchmarkToolRoundTrip-2   	     276	   3935042 ns/op	         3.935 ms/roundtrip	         1.499 server-ms/roundtrip	  832573 B/op	    2622 allocs/op
BenchmarkToolRoundTrip-2   	     294	   4037726 ns/op	         4.038 ms/roundtrip	         1.501 server-ms/roundtrip	  833725 B/op	    2626 allocs/op
BenchmarkIndexBuildGOROOT/build+watch-2   	      10	 103883005 ns/op	     15036 files/op
BenchmarkStreamedChunk   	       7	 156971460 ns/op	        78.49 µs/chunk
--- BENCH: BenchmarkGrepGOROOT-2
PASS`
	values := map[string][]float64{}
	parseBenchOutput(out, values)
	for key, want := range map[string][]float64{
		"BenchmarkToolRoundTrip server-ms/roundtrip":     {1.499, 1.501},
		"BenchmarkToolRoundTrip ns/op":                   {3935042, 4037726},
		"BenchmarkIndexBuildGOROOT/build+watch ns/op":    {103883005},
		"BenchmarkIndexBuildGOROOT/build+watch files/op": {15036},
		"BenchmarkStreamedChunk µs/chunk":                {78.49},
	} {
		got := values[key]
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want %v", key, got, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: got %v, want %v", key, got, want)
			}
		}
	}
	if len(values) != 9 {
		t.Errorf("got %d keys: %v", len(values), values)
	}
}

func TestPeerRunLine(t *testing.T) {
	line := "    peers_test.go:90: qwen -p       run 2:   9384 ms, CPU   5185 ms (first model request at  8924 ms, last at  9177 ms)  max RSS 263.4 MB  tree peak PSS 433.0 MB (4 processes at once)  2 model requests (0 side)"
	m := peerRunLine.FindStringSubmatch(line)
	if m == nil || m[1] != "qwen -p" || m[2] != "9384" || m[3] != "5185" || m[4] != "263.4" || m[5] != "433.0" {
		t.Fatalf("got %q", m)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {nil, -1}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestGenerateTree(t *testing.T) {
	dir := t.TempDir()
	if err := generateTree(dir, 250); err != nil {
		t.Fatal(err)
	}
	files, goFiles, matches := 0, 0, 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if strings.HasSuffix(p, ".go") {
			goFiles++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			matches += strings.Count(string(b), "Context(ctx context.Context")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != 250 || goFiles != 175 || matches == 0 {
		t.Errorf("%d files, %d Go files, %d grep matches; want 250, 175, some", files, goFiles, matches)
	}
}

func TestCheckSoakResults(t *testing.T) {
	toolMsg := func(id, text string) modeltest.Message {
		raw, _ := json.Marshal(text)
		return modeltest.Message{Role: "tool", ToolCallID: id, Content: raw}
	}
	good := []modeltest.Request{
		{}, {Messages: []modeltest.Message{{Role: "user"}, toolMsg("call_0", "1\ta line of notes for the soak")}},
		{}, {Messages: []modeltest.Message{toolMsg("call_1", "func AlphaContext(ctx context.Context, beta int)")}},
	}
	if err := checkSoakResults(good, 2); err != nil {
		t.Errorf("good results: %v", err)
	}
	noted := []modeltest.Request{{}, {Messages: []modeltest.Message{toolMsg("call_0", "notes.txt has not changed since you read it")}}}
	if err := checkSoakResults(noted, 1); err == nil {
		t.Error("a result without the file's text passed")
	}
	missing := []modeltest.Request{{}, {Messages: []modeltest.Message{{Role: "user"}}}}
	if err := checkSoakResults(missing, 1); err == nil {
		t.Error("a request without the tool result passed")
	}
	if err := checkSoakResults(good[:2], 2); err == nil {
		t.Error("a missing second request passed")
	}
}

// The /proc readers find this process's own figures.
func TestProcReaders(t *testing.T) {
	st, err := readProc(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if st.RSSKB <= 0 || st.Threads <= 0 || st.FDs <= 0 {
		t.Errorf("readProc(self) = %+v, want RSS, threads and descriptors", st)
	}
	if st.AnonKB <= 0 || st.AnonKB > st.RSSKB {
		t.Errorf("readProc(self).AnonKB = %d, want 1..%d", st.AnonKB, st.RSSKB)
	}
}
