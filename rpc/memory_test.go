package rpc

import "testing"

// soon runs the release once after a burst; after stop, nothing is
// pending and soon does nothing.
func TestReleaserRunsOnceStopped(t *testing.T) {
	ran := make(chan struct{}, 4)
	r := &releaser{release: func() { ran <- struct{}{} }}
	r.soon()
	r.soon()
	<-ran
	r.stop()
	r.soon()
	r.mu.Lock()
	pending := r.timer != nil
	r.mu.Unlock()
	if pending {
		t.Fatal("a release is pending after stop")
	}
}
