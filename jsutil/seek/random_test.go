package seek

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

var seedFlag = flag.Uint64("seek.seed", 0, "seed for TestRandomized (0 = from the clock)")

// TestRandomized builds streams with interior deletes (single and long
// runs), purges, a limit that drops the oldest messages, a deleted tail and
// several subjects, then checks every mode × filter × strategy for a few
// hundred target times against the answer found by reading every message.
func TestRandomized(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seek.seed=%d)", seed, seed)
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(storage.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(storage)))
			js := startJS(t)
			s := buildRandomStream(t, js, rng, storage)
			msgs, first, last := readAll(t, s)
			equal := 0
			for i := 1; i < len(msgs); i++ {
				if msgs[i].Time.Equal(msgs[i-1].Time) {
					equal++
				}
			}
			t.Logf("stream: first %d last %d, %d messages, %d with the time of the one before", first, last, len(msgs), equal)
			if len(msgs) < 50 {
				t.Fatalf("too few messages left: %d", len(msgs))
			}
			n := 160
			if raceEnabled {
				n = 30
			}
			targets := randomTargets(rng, msgs, n)
			filters := []string{"", "r.a", "r.c.>", "r.*", "none.x"}
			base := apiGetterFor(t, js, "RAND")
			strategies := []struct {
				name     string
				g        getter
				strategy Strategy
			}{
				{"auto", base, Auto},
				{"server", base, Server},
				{"bisect", base, Bisect},
				{"auto-old-lenient", oldServer{getter: base}, Auto},
				{"auto-old-strict", oldServer{getter: base, strict: true}, Auto},
			}
			checked := 0
			for _, st := range strategies {
				for _, mode := range []Mode{After, Before, Nearest} {
					for _, filter := range filters {
						for _, target := range targets {
							want, wantSeq := expect(msgs, first, last, target, mode, filter)
							res, err := seekWith(testCtx(t), st.g, target, Options{Mode: mode, Subject: filter, Strategy: st.strategy})
							if err != nil {
								t.Fatalf("%s %s %q %s: %v", st.name, mode, filter, target.Format(time.RFC3339Nano), err)
							}
							if msgString(res.Message) != msgString(want) || res.Sequence != wantSeq {
								t.Fatalf("%s mode %s filter %q target %s: got %s seq %d, want %s seq %d",
									st.name, mode, filter, target.UTC().Format(time.RFC3339Nano),
									msgString(res.Message), res.Sequence, msgString(want), wantSeq)
							}
							if !res.Exact() {
								t.Fatalf("%s mode %s filter %q target %s: timestamps that never go backwards reported stepping back: %+v",
									st.name, mode, filter, target.UTC().Format(time.RFC3339Nano), res.SteppedBack)
							}
							if st.strategy == Server && res.Used != Server || st.strategy == Bisect && res.Used != Bisect {
								t.Fatalf("%s: used %s", st.name, res.Used)
							}
							checked++
						}
					}
				}
			}
			t.Logf("checked %d seeks", checked)
		})
	}
}

// buildRandomStream publishes a few hundred messages on several subjects,
// some in quick bursts (equal timestamps are possible) and some spaced, then
// removes messages in every way a stream loses them.
func buildRandomStream(t *testing.T, js jetstream.JetStream, rng *rand.Rand, storage jetstream.StorageType) jetstream.Stream {
	t.Helper()
	s := mustStream(t, js, jetstream.StreamConfig{
		Name: "RAND", Subjects: []string{"r.>"}, Storage: storage, MaxMsgs: 330,
	})
	subjects := []string{"r.a", "r.b", "r.c.x", "r.c.y", "r.d"}
	weights := []int{30, 40, 10, 5, 15}
	pick := func() string {
		n := rng.IntN(100)
		for i, w := range weights {
			if n < w {
				return subjects[i]
			}
			n -= w
		}
		return subjects[0]
	}
	ctx := testCtx(t)
	for i := 0; i < 380; i++ {
		if rng.IntN(10) == 0 {
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		}
		mustPub(t, js, pick(), fmt.Sprintf("m%d", i))
	}
	// MaxMsgs dropped the first 50; purge 20 more from the front.
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(info.State.FirstSeq+20)); err != nil {
		t.Fatal(err)
	}
	// Purge one subject except its last 5 messages.
	if err := s.Purge(ctx, jetstream.WithPurgeSubject("r.d"), jetstream.WithPurgeKeep(5)); err != nil {
		t.Fatal(err)
	}
	info, err = s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	del := func(seq uint64) {
		// Sequences already gone (purged subject, earlier deletes) fail;
		// that is fine.
		_ = s.DeleteMsg(ctx, seq)
	}
	// Single interior deletes.
	for i := 0; i < 25; i++ {
		del(first + 1 + uint64(rng.IntN(int(last-first-1))))
	}
	// A long run.
	start := first + 40 + uint64(rng.IntN(100))
	for seq := start; seq < start+45; seq++ {
		del(seq)
	}
	// The tail.
	for seq := last - 3; seq <= last; seq++ {
		del(seq)
	}
	return s
}

// randomTargets picks n target times: message times themselves, ±1ns around
// them, random times inside the stream's span and times outside it.
func randomTargets(rng *rand.Rand, msgs []Message, n int) []time.Time {
	firstT, lastT := msgs[0].Time, msgs[len(msgs)-1].Time
	span := lastT.Sub(firstT)
	out := []time.Time{
		firstT, lastT, firstT.Add(-time.Nanosecond), lastT.Add(time.Nanosecond),
		firstT.Add(-time.Hour), lastT.Add(time.Hour), time.Unix(0, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for len(out) < n {
		switch rng.IntN(4) {
		case 0:
			out = append(out, msgs[rng.IntN(len(msgs))].Time)
		case 1:
			out = append(out, msgs[rng.IntN(len(msgs))].Time.Add(-time.Nanosecond))
		case 2:
			out = append(out, msgs[rng.IntN(len(msgs))].Time.Add(time.Nanosecond))
		default:
			out = append(out, firstT.Add(time.Duration(rng.Int64N(int64(span)+1))))
		}
	}
	return out
}
