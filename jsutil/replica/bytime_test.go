package replica

import (
	"testing"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go/jetstream"
)

// TestByTimeDeletedOriginMessage: an origin message deleted after a source
// of a source copied it is translated from the time of the message before
// it. By the time of the message after it the start would be past its
// copy, which was stored before that message was published: a skipped
// message, where by-time promises to err towards repeating.
func TestByTimeDeletedOriginMessage(t *testing.T) {
	s := natsproc.Start(t, natsproc.Options{})
	js := connectJS(t, s.URL(), "")
	mustStream(t, js, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"orders.>"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "HOP", Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}}})
	mustStream(t, js, jetstream.StreamConfig{Name: "CHAIN", Sources: []*jetstream.StreamSource{{Name: "HOP"}}})
	publish(t, js, "ORIGIN", 2, "orders.a")
	waitMsgs(t, js, "CHAIN", 2) // copies of 1 and 2 stored before 3 exists
	publish(t, js, "ORIGIN", 1, "orders.a")
	waitMsgs(t, js, "CHAIN", 3)
	deleteSeqs(t, js, "ORIGIN", 2)

	res, err := Translate(testCtx(t), Side{JS: js, Stream: "ORIGIN"}, 2, Side{JS: js, Stream: "CHAIN"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != ByTime {
		t.Fatalf("method %s, want %s (CHAIN records HOP, not ORIGIN)", res.Method, ByTime)
	}
	// CHAIN holds ORIGIN's messages in order: its 2 is the copy of ORIGIN 2,
	// and ORIGIN 1's time finds its 1.
	if res.StartSeq != 1 {
		t.Errorf("start %d, want 1 (from the time of ORIGIN 1; past 2 skips the copy of the deleted message)", res.StartSeq)
	}
}
