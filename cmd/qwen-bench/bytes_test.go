package main

import "testing"

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
