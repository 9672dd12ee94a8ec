package replica

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

var benchSizes = flag.String("replica.sizes", "1000,10000,100000", "origin sizes (messages) of BenchmarkTranslate")

// BenchmarkTranslate measures the requests a translation sends against the
// size of the streams, on a nats-server process: a mirror, a stream
// sourcing one origin, one sourcing two origins interleaved (each origin's
// subjects distinct in the target) and one sourcing two origins whose
// messages share subjects in the target, with allow_direct (a search steps
// over the other origin's messages in batched direct gets).
//
//	go test ./jsutil/replica -run '^$' -bench BenchmarkTranslate -benchtime 200x
func BenchmarkTranslate(b *testing.B) {
	for _, f := range strings.Split(*benchSizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) { benchSize(b, n) })
	}
}

func benchSize(b *testing.B, n int) {
	s := natsproc.Start(b, natsproc.Options{})
	js := connectJS(b, s.URL(), "")
	mustStream(b, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a.>"}})
	mustStream(b, js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}})
	mustStream(b, js, jetstream.StreamConfig{Name: "MIRROR", Mirror: &jetstream.StreamSource{Name: "A"}})
	mustStream(b, js, jetstream.StreamConfig{Name: "ONE", Sources: []*jetstream.StreamSource{{Name: "A"}}})
	mustStream(b, js, jetstream.StreamConfig{Name: "TWO", Sources: []*jetstream.StreamSource{{Name: "A"}, {Name: "B"}}})
	mustStream(b, js, jetstream.StreamConfig{Name: "SHARED", AllowDirect: true, Sources: []*jetstream.StreamSource{{Name: "A"},
		{Name: "B", SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "b.>", Destination: "a.>"}}}}})
	start := time.Now()
	fill(b, js, n)
	for name, want := range map[string]uint64{"MIRROR": uint64(n), "ONE": uint64(n), "TWO": uint64(2 * n), "SHARED": uint64(2 * n)} {
		testserver.WaitFor(b, 10*time.Minute, name+" to catch up", func() bool { return state(b, js, name).Msgs == want })
	}
	b.Logf("built origins of %d messages and their replicas in %s", n, time.Since(start).Round(time.Millisecond))
	for _, name := range []string{"MIRROR", "ONE", "TWO", "SHARED"} {
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			ctx := testCtx(b)
			reqs, most := 0, 0
			for b.Loop() {
				res, err := Translate(ctx, Side{JS: js, Stream: "A"}, 1+rng.Uint64N(uint64(n)), Side{JS: js, Stream: name})
				if err != nil || res.TargetSeq == 0 {
					b.Fatalf("%s: %+v %v", name, res, err)
				}
				reqs += res.Requests
				most = max(most, res.Requests)
			}
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
			b.ReportMetric(float64(most), "max-requests")
		})
	}
}

// fill publishes n messages to A and n to B, in turn in runs of 10.
func fill(b *testing.B, js jetstream.JetStream, n int) {
	b.Helper()
	for i := 0; i < n; i += 10 {
		for _, subj := range []string{"a.x", "b.x"} {
			for k := 0; k < 10 && i+k < n; k++ {
				if _, err := js.PublishAsync(subj, []byte("x")); err != nil {
					b.Fatal(err)
				}
			}
		}
		if i%1000 == 0 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("publish: no acks within a minute")
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publish: no acks within a minute")
	}
}
