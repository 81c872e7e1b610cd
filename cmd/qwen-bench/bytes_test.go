package main

import (
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// The cacheable share counts the previous request's messages (its cache
// marks changed a string into a part, not the text) and the tools, and
// nothing when the tools changed.
func TestCachedAfter(t *testing.T) {
	first := viewOf([]byte(`{"messages":[{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"text","text":"u","cache_control":{"type":"ephemeral"}}]}],"tools":[{"type":"function","function":{"name":"a"},"cache_control":{"type":"ephemeral"}}]}`))
	second := viewOf([]byte(`{"messages":[{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"u"},{"role":"assistant","content":"x"}],"tools":[{"type":"function","function":{"name":"a"},"cache_control":{"type":"ephemeral"}}]}`))
	if first.cachedAfter(nil) != 0 {
		t.Fatal("first request cached")
	}
	want := second.toolSize + second.sizes[0] + second.sizes[1]
	if got := second.cachedAfter(first); got != want {
		t.Fatalf("cached %d, want %d", got, want)
	}
	edited := viewOf([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"v"}],"tools":[{"type":"function","function":{"name":"a"}}]}`))
	if got, want := edited.cachedAfter(first), edited.toolSize+edited.sizes[0]; got != want {
		t.Fatalf("edited: cached %d, want %d (tools and system)", got, want)
	}
	other := viewOf([]byte(`{"messages":[{"role":"system","content":"s"}],"tools":[{"type":"function","function":{"name":"b"}}]}`))
	if other.cachedAfter(first) != 0 {
		t.Fatal("changed tools still cached")
	}
}

// The share counts prompt bytes (tools and messages) only: the envelope
// (model, stream options, metadata) differs in no way a cache could use,
// and the first request reads nothing.
func TestCacheUseCountsPromptBytes(t *testing.T) {
	first := `{"model":"m","metadata":{"promptId":"p1"},"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"tools":[{"type":"function","function":{"name":"a"}}]}`
	second := `{"model":"m","metadata":{"promptId":"p2"},"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}}]}`
	st := cacheUse([]modeltest.Request{{Body: []byte(first)}, {Body: []byte(second)}})
	v1, v2 := viewOf([]byte(first)), viewOf([]byte(second))
	if st.prompt != v1.promptSize()+v2.promptSize() || st.body != len(first)+len(second) || st.prompt >= st.body {
		t.Fatalf("prompt %d, body %d", st.prompt, st.body)
	}
	if want := v2.toolSize + v2.sizes[0] + v2.sizes[1]; st.cached != want || st.firstPrompt != v1.promptSize() {
		t.Fatalf("cached %d, want %d", st.cached, want)
	}
	if got, want := st.share(), 100*float64(st.cached)/float64(st.prompt); got != want || st.laterShare() <= got {
		t.Fatalf("share %.2f (want %.2f), later %.2f", got, want, st.laterShare())
	}
}
