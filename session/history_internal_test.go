package session

import "testing"

// A replayed prompt is the user's own words: every note appended for the
// model is cut, and text that only looks like markup stays.
func TestReplayedPromptLosesTheNotesForTheModel(t *testing.T) {
	for in, want := range map[string]string{
		"Fix it" + reminderOpen + "The user is looking at /w/a.go\n</system-reminder>" + reminderOpen + "The user undid turn 1.\n</system-reminder>": "Fix it",
		"a <b>c</b>\nd": "a <b>c</b>\nd",
		"quote <system-reminder>\nmine\n</system-reminder> in the middle": "quote <system-reminder>\nmine\n</system-reminder> in the middle",
	} {
		if got := withoutReminders(in); got != want {
			t.Errorf("withoutReminders(%q) = %q, want %q", in, got, want)
		}
	}
}
