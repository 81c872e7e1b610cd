package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func thoughtUpdate(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": text}})
	return b
}

func messageUpdate(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
	return b
}

// Reasoning streams a few words at a time: the fragments flow into one
// block, its later lines indented, and the answer starts on a line of its
// own. qwen-ls's notices go to their own writer, even in mid-thought.
func TestPrinterFlowsReasoningAndSeparatesNotices(t *testing.T) {
	var out, notes bytes.Buffer
	p := newPrinter(&out, "/w")
	p.notes = &notes
	for _, u := range []json.RawMessage{
		thoughtUpdate("\n"),
		thoughtUpdate("The user wants"),
		thoughtUpdate(" the notes."),
		thoughtUpdate("\n\nFirst I"),
		thoughtUpdate(" [read] them."),
		thoughtUpdate("[The model request failed (503 Service Unavailable); retry 1 in 0.4 s.]\n"),
		thoughtUpdate(" Then answer."),
		messageUpdate("The notes"),
		messageUpdate(" say 42."),
	} {
		p.update(u)
	}
	p.line("")
	want := "  thinking: The user wants the notes.\n\n    First I [read] them.\n" +
		"  thinking: Then answer.\n" +
		"\nQwen: The notes say 42.\n\n"
	if got := out.String(); got != want {
		t.Errorf("transcript:\ngot  %q\nwant %q", got, want)
	}
	if got, want := notes.String(), "qwen-ls: The model request failed (503 Service Unavailable); retry 1 in 0.4 s.\n"; got != want {
		t.Errorf("notices: got %q, want %q", got, want)
	}

	// Without a writer of their own (the demo), notices are marked lines
	// of the transcript; one that comes first is a notice too.
	out.Reset()
	p = newPrinter(&out, "/w")
	p.update(thoughtUpdate("[Summarising the 12 oldest messages so the conversation fits the model's context.]\n"))
	p.update(thoughtUpdate("Next step."))
	p.update(messageUpdate("ok"))
	p.line("")
	if got, want := out.String(), "  ! Summarising the 12 oldest messages so the conversation fits the model's context.\n  thinking: Next step.\n\nQwen: ok\n\n"; got != want {
		t.Errorf("demo transcript:\ngot  %q\nwant %q", got, want)
	}
}

// End to end: a retried request and a streamed thought, through the real
// binary and the scripted model.
func TestExecPrintsRetriesApartFromThoughts(t *testing.T) {
	root := t.TempDir()
	m := modeltest.Start(t,
		modeltest.Response{Status: 503},
		modeltest.Response{Reasoning: "The user says hello. I will greet them back briefly.", Text: "Hello!", ChunkSize: 5},
	)
	cmd := exec.Command(binPath, "exec", "-p", "hello", "--cwd", root)
	cmd.Env = execEnv(t, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "  thinking: The user says hello. I will greet them back briefly.\n") ||
		!strings.Contains(out.String(), "Qwen: Hello!") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if strings.Contains(out.String(), "request failed") {
		t.Errorf("the retry notice is in the transcript:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "qwen-ls: The model request failed (") || !strings.Contains(errb.String(), "retry 1 in ") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// A first request too long for a small local window: exec fails at once
// with a message that says what to change, not only the server's words.
func TestExecSaysWhatToDoWhenTheWindowIsTooSmall(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 2048 tokens. However, your messages resulted in 7100 tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":"context_length_exceeded"}}`})
	cmd := exec.Command(binPath, "exec", "-p", "hello", "--cwd", t.TempDir())
	cmd.Env = execEnv(t, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitError {
		t.Fatalf("exec: %v\n%s\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"counted 7100 tokens against a window of 2048", "model.contextWindow", "smaller request"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
