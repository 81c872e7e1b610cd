package tools

import "testing"

// What the model reads about a review decided hunk by hunk: the reason of
// each rejected hunk, on one line; the only hunk's reason as the change's
// feedback; nothing about reasons when there are none.
func TestReviewReasons(t *testing.T) {
	const old, proposed = "a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n"
	r := ReviewReportOf(old, proposed, []bool{false, false}, map[int]string{1: "  keep e\n\tlower  "})
	if r.Summary() != "0 of 2 changes kept" || r.Hunks[1].Feedback != "keep e lower" || r.Hunks[0].Feedback != "" {
		t.Fatalf("report = %+v", r)
	}
	want := "The user rejected the proposed change to /w/a.txt; the file was not modified. The user's feedback: not now. The user's reasons, by change: original lines 5-5: keep e lower"
	if got := RejectionReason("/w/a.txt", "not now", r); got != want {
		t.Errorf("rejection:\n%q\nwant\n%q", got, want)
	}
	one := ReviewReportOf("a\n", "b\n", nil, map[int]string{0: "use b later"})
	if got := RejectionReason("/w/a.txt", "", one); got != "The user rejected the proposed change to /w/a.txt; the file was not modified. The user's feedback: use b later" {
		t.Errorf("the only hunk's reason: %q", got)
	}
	if got := RejectionReason("/w/a.txt", "", ReviewReportOf(old, proposed, nil, nil)); got != "The user rejected the proposed change to /w/a.txt; the file was not modified." {
		t.Errorf("no reasons: %q", got)
	}
	kept := ReviewReportOf(old, proposed, []bool{true, false}, map[int]string{0: "a reason for a kept hunk is left out"})
	if kept.Hunks[0].Feedback != "" || kept.Summary() != "1 of 2 changes kept" {
		t.Errorf("kept = %+v", kept)
	}
	if got := partialSentence(kept, ""); got != "The user applied only 1 of the 2 proposed changes; the changes at original lines 5-5 were rejected and not applied; those at original lines 1-1 were applied." {
		t.Errorf("partial: %q", got)
	}
}
