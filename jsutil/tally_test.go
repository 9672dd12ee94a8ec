package jsutil_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
)

// A tally's reports go up one at a time however its workers interleave:
// the count and its report are one step.
func TestTallyInOrder(t *testing.T) {
	const n = 2000
	var got []int
	tl := jsutil.NewTally(func(done, total int) {
		if total != n+1 {
			t.Errorf("total %d, want %d", total, n+1)
		}
		runtime.Gosched() // let another worker count meanwhile, if it can
		got = append(got, done)
	}, n)
	tl.Grow() // one step found while working
	tl.Start()
	var wg sync.WaitGroup
	for range n + 1 {
		wg.Go(tl.Step)
	}
	wg.Wait()
	if len(got) != n+2 {
		t.Fatalf("%d reports, want %d", len(got), n+2)
	}
	for i, d := range got {
		if d != i {
			t.Fatalf("report %d says %d done: reports went %v", i, d, got[max(0, i-3):min(len(got), i+3)])
		}
	}
}
