package commands

import (
	"errors"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// After a handler exits, its output is read while it still arrives: a
// quiet tick that finds new output waits on; one that finds none, or the
// limit, ends the wait; the output's end ends it at once.
func TestOutputEndsWhileOutputArrives(t *testing.T) {
	type outcome struct{ ended, cut bool }
	run := func(done <-chan struct{}, copied func() int64, quiet, limit chan time.Time) <-chan outcome {
		r := make(chan outcome, 1)
		go func() {
			ended, cut := outputEnds(done, copied, 0, quiet, limit)
			r <- outcome{ended, cut}
		}()
		return r
	}
	// growing is output still arriving: each look finds more than the last.
	growing := func() func() int64 {
		n := int64(0)
		return func() int64 { n += 65536; return n }
	}
	still := func() int64 { return 10 }
	t.Run("arriving then ends", func(t *testing.T) {
		done, quiet, limit := make(chan struct{}), make(chan time.Time), make(chan time.Time)
		r := run(done, growing(), quiet, limit)
		for i := 0; i < 5; i++ {
			quiet <- time.Time{} // received: the wait went on
		}
		close(done)
		if got := <-r; got != (outcome{ended: true}) {
			t.Fatalf("output that kept arriving and then ended: %+v, want ended", got)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		quiet, limit := make(chan time.Time), make(chan time.Time)
		r := run(make(chan struct{}), still, quiet, limit)
		quiet <- time.Time{} // 10 bytes since the start: goes on
		quiet <- time.Time{} // nothing since: ends
		if got := <-r; got != (outcome{}) {
			t.Fatalf("a quiet pipe held open: %+v, want neither ended nor cut", got)
		}
	})
	t.Run("limit", func(t *testing.T) {
		quiet, limit := make(chan time.Time), make(chan time.Time)
		r := run(make(chan struct{}), growing(), quiet, limit)
		quiet <- time.Time{}
		limit <- time.Time{}
		if got := <-r; got != (outcome{cut: true}) {
			t.Fatalf("output still arriving at the limit: %+v, want cut", got)
		}
	})
}

// A batch whose output was cut off while still arriving fails every message
// it gave no result line for: its exit status alone cannot say they
// succeeded.
func TestBatchCutOffFailsMessagesWithoutResult(t *testing.T) {
	r := &batchResults{inBatch: map[uint64]bool{1: true}, got: map[uint64]*seqResult{}}
	if errs := r.errors(nil); errs != nil {
		t.Fatalf("no result lines, not cut: %v, want the exit status to decide", errs)
	}
	r.cutOff(errors.New("cut"))
	ds := []acks.Delivery{{Seq: 1}, {Seq: 2}}
	errs := r.errors(ds)
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil || errs[0].Error() != "cut" {
		t.Fatalf("cut off: %v, want both messages failed with the cut reason", errs)
	}
}
