package seek

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var benchMsgs = flag.Int("seek.benchmsgs", 1_000_000, "messages in BenchmarkSeek's stream")

// benchServerEnv, when set, makes TestHelperServerProcess run a server
// with its store in that directory (see startServerProcess).
const benchServerEnv = "JSCTL_SEEK_BENCH_SERVER_DIR"

// TestHelperServerProcess is not a test: BenchmarkSeek runs the test binary
// with this test selected to get a JetStream server in another process, so
// the benchmark's memory figures are the client's alone. It prints the
// server's URL and runs until its stdin closes.
func TestHelperServerProcess(t *testing.T) {
	dir := os.Getenv(benchServerEnv)
	if dir == "" {
		t.Skip("helper process for BenchmarkSeek")
	}
	s, err := testserver.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stdout, "URL", s.ClientURL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Shutdown()
	s.WaitForShutdown()
}

// startServerProcess starts a JetStream server in a child process and
// returns its URL; it stops when b ends.
func startServerProcess(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+b.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return url
		}
	}
	b.Fatalf("server process gave no URL: %v", sc.Err())
	return ""
}

// buildBenchStream publishes n small messages (async, memory storage) on
// ten subjects and returns the stream.
func buildBenchStream(b *testing.B, js jetstream.JetStream, n int) jetstream.Stream {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	payload := []byte("0123456789abcdef")
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("bench.s%d", i%10), payload); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publishing did not complete")
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if info.State.Msgs != uint64(n) {
		b.Fatalf("stream has %d messages, want %d", info.State.Msgs, n)
	}
	b.Logf("built a stream of %d messages in %s", n, time.Since(start).Round(time.Millisecond))
	return s
}

// consumerSeek is what users do today: create an ephemeral consumer that
// starts at the time, read its first message, delete the consumer.
func consumerSeek(ctx context.Context, js jetstream.JetStream, stream string, t time.Time) (uint64, error) {
	c, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &t,
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, InactiveThreshold: time.Minute,
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = js.DeleteConsumer(ctx, stream, c.CachedInfo().Name) }()
	m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		return 0, err
	}
	md, err := m.Metadata()
	if err != nil {
		return 0, err
	}
	return md.Sequence.Stream, nil
}

// BenchmarkSeek measures the latency of one "after" seek on a stream of
// -seek.benchmsgs messages (default 1,000,000) with the server's time index,
// the client-side bisect, and an ephemeral consumer with
// DeliverByStartTime. The server runs in a child process, so B/op and
// allocs/op are the client's. bench.sh prints the figures as a table with
// ratios.
func BenchmarkSeek(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a stream of a million messages")
	}
	nc, err := nats.Connect(startServerProcess(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		b.Fatal(err)
	}
	s := buildBenchStream(b, js, *benchMsgs)
	info := s.CachedInfo()
	ctx := context.Background()
	firstT, lastT := info.State.FirstTime, info.State.LastTime
	span := lastT.Sub(firstT)
	targets := make([]time.Time, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range targets {
		targets[i] = firstT.Add(time.Duration(rng.Int64N(int64(span))))
	}

	// The three approaches agree.
	for _, t := range targets[:20] {
		rs, err := Seek(ctx, js, "BENCH", t, Options{Strategy: Server})
		if err != nil {
			b.Fatal(err)
		}
		rb, err := Seek(ctx, js, "BENCH", t, Options{Strategy: Bisect})
		if err != nil {
			b.Fatal(err)
		}
		rc, err := consumerSeek(ctx, js, "BENCH", t)
		if err != nil {
			b.Fatal(err)
		}
		if rs.Sequence != rb.Sequence || rs.Sequence != rc {
			b.Fatalf("target %s: server %d, bisect %d, consumer %d", t.Format(time.RFC3339Nano), rs.Sequence, rb.Sequence, rc)
		}
	}

	seekBench := func(strategy Strategy, mode Mode, subject string) func(b *testing.B) {
		return func(b *testing.B) {
			g := &countingGetter{getter: apiGetterFor(b, js, "BENCH")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := seekWith(ctx, g, targets[i%len(targets)], Options{Strategy: strategy, Mode: mode, Subject: subject}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.gets+g.infos)/float64(b.N), "requests/op")
		}
	}
	b.Run("server", seekBench(Server, After, ""))
	b.Run("bisect", seekBench(Bisect, After, ""))
	b.Run("consumer", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := consumerSeek(ctx, js, "BENCH", targets[i%len(targets)]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(3, "requests/op")
	})
	b.Run("server-nearest-filtered", seekBench(Server, Nearest, "bench.s3"))
	b.Run("bisect-nearest-filtered", seekBench(Bisect, Nearest, "bench.s3"))
}
