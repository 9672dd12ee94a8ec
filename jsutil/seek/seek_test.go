package seek

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

var allStrategies = []Strategy{Auto, Server, Bisect}

func TestEmptyAndPurgedStreams(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	mustStream(t, js, jetstream.StreamConfig{Name: "EMPTY", Subjects: []string{"e.>"}, Storage: jetstream.MemoryStorage})
	p := mustStream(t, js, jetstream.StreamConfig{Name: "PURGED", Subjects: []string{"p.>"}})
	for i := 0; i < 5; i++ {
		mustPub(t, js, "p.x", "x")
	}
	if err := p.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		stream string
		mode   Mode
		want   uint64
	}{
		{"EMPTY", After, 1}, {"EMPTY", Before, 1}, {"EMPTY", Nearest, 1},
		{"PURGED", After, 6}, {"PURGED", Before, 6}, {"PURGED", Nearest, 6},
	}
	for _, c := range cases {
		for _, st := range allStrategies {
			res, err := Seek(ctx, js, c.stream, time.Now(), Options{Mode: c.mode, Strategy: st, Around: 2})
			if err != nil {
				t.Fatalf("%s %s %s: %v", c.stream, c.mode, st, err)
			}
			if res.Message != nil || res.Sequence != c.want || len(res.Neighbours) != 0 {
				t.Errorf("%s %s %s: got %s seq %d (%d neighbours), want none at %d",
					c.stream, c.mode, st, msgString(res.Message), res.Sequence, len(res.Neighbours), c.want)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	for _, st := range allStrategies {
		_, err := Seek(ctx, js, "NOPE", time.Now(), Options{Strategy: st})
		if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `"NOPE"`) {
			t.Errorf("%s: unknown stream: got %v, want not found naming the stream", st, err)
		}
	}
	for _, o := range []Options{{Mode: "sideways"}, {Strategy: "guess"}, {Around: -1}, {Subject: "s..a"}, {Subject: "s.>.a"}} {
		if _, err := Seek(ctx, js, "NOPE", time.Now(), o); !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("%+v: got %v, want bad input", o, err)
		}
	}
	if _, err := Seek(ctx, js, "A.B", time.Now(), Options{}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("bad stream name: got %v, want bad input", err)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	mustPub(t, js, "s.a", "x")
	g := apiGetterFor(t, js, "S")
	if _, err := seekWith(ctx, oldServer{getter: g}, time.Now(), Options{Mode: After, Strategy: Server}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("server strategy on an old server: got %v, want ErrUnsupported", err)
	}
}

// TestNeighboursAndCost checks the neighbours and that the server strategy
// answers After in one message-get request (sent alongside the stream info),
// and an exact hit in two (the second checks for earlier messages stored
// in the same nanosecond).
func TestNeighboursAndCost(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	s := mustStream(t, js, jetstream.StreamConfig{Name: "N", Subjects: []string{"n.>"}})
	for i := 0; i < 10; i++ {
		mustPub(t, js, "n.a", "x")
		time.Sleep(time.Millisecond)
	}
	if err := s.DeleteMsg(ctx, 4); err != nil {
		t.Fatal(err)
	}
	msgs, _, _ := readAll(t, s)
	target := msgs[4].Time // sequence 6 (4 is deleted)

	for _, c := range []struct {
		at   time.Time
		gets int
	}{{target.Add(-time.Nanosecond), 1}, {target, 2}} {
		cg := &countingGetter{getter: apiGetterFor(t, js, "N")}
		res, err := seekWith(ctx, cg, c.at, Options{Mode: After, Strategy: Auto})
		if err != nil {
			t.Fatal(err)
		}
		if res.Sequence != 6 || res.Used != Server || cg.gets != c.gets || cg.infos != 1 {
			t.Errorf("after %s: seq %d used %s with %d gets and %d infos, want 6, server, %d and 1",
				c.at.Format(time.RFC3339Nano), res.Sequence, res.Used, cg.gets, cg.infos, c.gets)
		}
	}

	res, err := Seek(ctx, js, "N", target, Options{Mode: Before, Around: 2})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, m := range res.Neighbours {
		seqs = append(seqs, m.Sequence)
	}
	if res.Sequence != 6 || len(seqs) != 5 || seqs[0] != 3 || seqs[1] != 5 || seqs[4] != 8 {
		t.Errorf("before with around 2: seq %d neighbours %v, want 6 and [3 5 6 7 8]", res.Sequence, seqs)
	}

	// Between two messages, nearest picks the closer one; the middle goes
	// to the later one.
	a, b := msgs[5].Time, msgs[6].Time // sequences 7 and 8
	mid := a.Add(b.Sub(a) / 2)
	if b.Sub(mid) == mid.Sub(a) {
		res, err = Seek(ctx, js, "N", mid, Options{Mode: Nearest})
		if err != nil || res.Sequence != 8 {
			t.Errorf("nearest at the middle: %v seq %d, want 8", err, res.Sequence)
		}
	}
	res, err = Seek(ctx, js, "N", a.Add(time.Nanosecond), Options{Mode: Nearest})
	if err != nil || res.Sequence != 7 {
		t.Errorf("nearest just after 7: %v seq %d, want 7", err, res.Sequence)
	}
}

// TestExpiredByAge checks a stream whose oldest messages expired.
func TestExpiredByAge(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	s := mustStream(t, js, jetstream.StreamConfig{Name: "AGE", Subjects: []string{"age.>"}, MaxAge: 300 * time.Millisecond})
	for i := 0; i < 3; i++ {
		mustPub(t, js, "age.old", "x")
	}
	testserver.WaitFor(t, 10*time.Second, "the messages to expire", func() bool {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs == 0
	})
	// The new messages stay: with the short age they would expire while
	// the seeks below run on a slow machine.
	cfg := s.CachedInfo().Config
	cfg.MaxAge = time.Hour
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	mustPub(t, js, "age.new", "x")
	mustPub(t, js, "age.new", "y")
	for _, st := range allStrategies {
		res, err := Seek(ctx, js, "AGE", time.Unix(0, 0), Options{Strategy: st})
		if err != nil || res.Sequence != 4 || res.FirstSeq != 4 {
			t.Errorf("%s: after the epoch: %v seq %d first %d, want 4 and 4", st, err, res.Sequence, res.FirstSeq)
		}
		res, err = Seek(ctx, js, "AGE", time.Unix(0, 0), Options{Strategy: st, Mode: Before})
		if err != nil || res.Message != nil || res.Sequence != 4 {
			t.Errorf("%s: before the epoch: %v seq %d, want none at 4", st, err, res.Sequence)
		}
		res, err = Seek(ctx, js, "AGE", time.Now().Add(time.Hour), Options{Strategy: st, Mode: Before, Subject: "age.old"})
		if err != nil || res.Message != nil || res.Sequence != 4 {
			t.Errorf("%s: expired subject: %v seq %d, want none at 4", st, err, res.Sequence)
		}
	}
}

// TestReplicated checks an R3 stream on a 3-node cluster, connected to
// each node in turn.
func TestReplicated(t *testing.T) {
	c := testserver.StartCluster(t, 3)
	js0, err := jetstream.New(testserver.Connect(t, c.Servers[0]))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	s := mustStream(t, js0, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	c.WaitForStreamLeader("R3")
	for i := 0; i < 40; i++ {
		mustPub(t, js0, []string{"r3.a", "r3.b"}[i%3/2], "x")
	}
	for _, seq := range []uint64{1, 2, 10, 11, 12, 13, 14, 40} {
		if err := s.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	msgs, first, last := readAll(t, s)
	var targets []time.Time
	for _, m := range msgs {
		targets = append(targets, m.Time, m.Time.Add(-time.Nanosecond), m.Time.Add(time.Nanosecond))
	}
	for i, srv := range c.Servers {
		js, err := jetstream.New(testserver.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []Strategy{Server, Bisect} {
			for _, mode := range []Mode{After, Before, Nearest} {
				for _, filter := range []string{"", "r3.b"} {
					for _, target := range targets {
						want, wantSeq := expect(msgs, first, last, target, mode, filter)
						res, err := Seek(ctx, js, "R3", target, Options{Mode: mode, Subject: filter, Strategy: st})
						if err != nil {
							t.Fatalf("node %d %s %s: %v", i+1, st, mode, err)
						}
						if msgString(res.Message) != msgString(want) || res.Sequence != wantSeq {
							t.Fatalf("node %d %s %s %q %s: got %s, want %s", i+1, st, mode, filter,
								target.Format(time.RFC3339Nano), msgString(res.Message), msgString(want))
						}
					}
				}
			}
		}
	}
}

// TestAtomicBatchTies checks R3 streams whose last messages are an atomic
// batch, which the leader stores with one timestamp: a seek to that time
// finds the first message of the batch, with or without a filter, in
// memory and file storage.
func TestAtomicBatchTies(t *testing.T) {
	c := testserver.StartCluster(t, 3)
	js := c.JetStream()
	ctx := testCtx(t)
	for _, storage := range []jetstream.StorageType{jetstream.MemoryStorage, jetstream.FileStorage} {
		name := "TIES" + strings.ToUpper(storage.String())
		s := mustStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"},
			Storage: storage, AllowAtomicPublish: true, Replicas: 3})
		c.WaitForStreamLeader(name)
		mustPub(t, js, name+".a", "one")
		mustPub(t, js, name+".a", "two")
		publishBatch(t, js, name+".b", name+".a", name+".c")
		msgs, first, last := readAll(t, s)
		if len(msgs) != 5 || !msgs[2].Time.Equal(msgs[4].Time) {
			t.Fatalf("%s: want the batch 3 to 5 stored with one time, got %v", name, msgs)
		}
		target := msgs[4].Time
		for _, mode := range []Mode{After, Before, Nearest} {
			for _, filter := range []string{"", name + ".a", name + ".c"} {
				for _, at := range []time.Time{target, target.Add(-time.Nanosecond)} {
					want, wantSeq := expect(msgs, first, last, at, mode, filter)
					for _, st := range allStrategies {
						res, err := Seek(ctx, js, name, at, Options{Mode: mode, Subject: filter, Strategy: st})
						if err != nil {
							t.Fatal(err)
						}
						if msgString(res.Message) != msgString(want) || res.Sequence != wantSeq {
							t.Errorf("%s %s %s %q at %s: got %s seq %d, want %s seq %d", name, st, mode, filter,
								at.Format(time.RFC3339Nano), msgString(res.Message), res.Sequence, msgString(want), wantSeq)
						}
					}
				}
			}
		}
	}
}

// TestDomain checks that requests go to the JetStream domain's API prefix.
func TestDomain(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) { o.JetStreamDomain = "hub" })
	js, err := jetstream.NewWithDomain(testserver.Connect(t, s), "hub")
	if err != nil {
		t.Fatal(err)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "D", Subjects: []string{"d.>"}})
	mustPub(t, js, "d.a", "x")
	for _, st := range allStrategies {
		res, err := Seek(testCtx(t), js, "D", time.Unix(0, 0), Options{Strategy: st})
		if err != nil || res.Sequence != 1 || res.Message == nil {
			t.Errorf("%s: %v, seq %d", st, err, res.Sequence)
		}
	}
}
