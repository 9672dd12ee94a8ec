package acks

import (
	"sync"
	"testing"
	"time"
)

// The fetcher of Consume leaves room for c.max - handled - out more
// messages (see fetch), so a message that finishes must leave the
// in-flight count (out) and enter the handled count in one step: seen in
// between, it counts in neither, and the fetcher takes one message too
// many (--max 4000 ran the handler 4001 times). A reader hammering the
// lock as messages finish checks that handled+out never drops.
func TestFinishCountsAtomically(t *testing.T) {
	const n = 30000
	l := &loop{c: &consumeConfig{}, failing: map[uint64]string{}, warned: map[string]bool{}, freed: make(chan struct{}, 1), out: n}
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	var low int
	running := make(chan struct{})
	go func() {
		defer wg.Done()
		low = n
		close(running)
		for {
			for !l.mu.TryLock() { // poll: a waiter that sleeps misses the moment
			}
			seen := l.sum.Handled() + l.out
			l.mu.Unlock()
			low = min(low, seen)
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	<-running
	for i := range n {
		l.finish(&job{got: time.Now(), res: Result{Action: Processed, Seq: uint64(i + 1)}})
	}
	close(stop)
	wg.Wait()
	if low != n || l.sum.Processed != n || l.out != 0 {
		t.Fatalf("handled+out dropped to %d while messages finished (want it to stay %d); processed %d, out %d", low, n, l.sum.Processed, l.out)
	}
}
