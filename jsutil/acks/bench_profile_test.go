//go:build unix

package acks_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// The server's CPU profile: with -acks.profile DIR, BenchmarkProcessLibrary
// starts its nats-server with a profiling port and records a CPU profile of
// the server over each timed run (DIR/<mode>-workers=<n>.pprof, and its
// message count in .msgs). jsutil/acks/bench.sh splits them by function
// family.
var (
	benchProfile     = flag.String("acks.profile", "", "a directory for CPU profiles of the server, one per library run")
	benchProfileSecs = flag.Int("acks.profilesecs", 15, "the length of each server profile; a run must end within it")
)

// profPortRe finds the profiling port in the server's log ("prof_port: -1"
// picks a free one).
var profPortRe = regexp.MustCompile(`profiling port: (\d+)`)

func (e *procEnv) profPort(b *testing.B) int {
	b.Helper()
	m := profPortRe.FindStringSubmatch(e.srv.LogTail(1 << 20))
	if m == nil {
		b.Fatalf("no profiling port in the server's log:\n%s", e.srv.LogTail(2000))
	}
	p, _ := strconv.Atoi(m[1])
	return p
}

// serverProfile is a CPU profile of the server in progress.
type serverProfile struct {
	done  chan error
	start time.Time
}

// startProfile starts a CPU profile of the server of -acks.profilesecs
// seconds and returns once the server is profiling: once the server's
// goroutines show its profile handler sleeping, which it does only after
// the profiler started (the goroutine list is read, so it cannot take the
// profiler itself, as a second profile request would).
func (e *procEnv) startProfile(b *testing.B, port int, file string) *serverProfile {
	b.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port)
	p := &serverProfile{done: make(chan error, 1), start: time.Now()}
	go func() {
		p.done <- fetchProfile(base+"profile?seconds="+strconv.Itoa(*benchProfileSecs), file)
	}()
	deadline := time.After(30 * time.Second)
	for {
		resp, err := http.Get(base + "goroutine?debug=1")
		if err != nil {
			b.Fatal(err)
		}
		stacks, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if bytes.Contains(stacks, []byte("net/http/pprof.sleep")) {
			return p
		}
		select {
		case err := <-p.done:
			b.Fatalf("the server's profile ended before it was seen running: %v", err)
		case <-deadline:
			b.Fatal("the server's profile was not seen running within 30s")
		case <-time.After(10 * time.Millisecond): // poll again
		}
	}
}

// fetchProfile writes the profile at url to file.
func fetchProfile(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("profile: status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// wait waits for the profile to end and fails the benchmark if the run
// outlasted it.
func (p *serverProfile) wait(b *testing.B, ran time.Duration) {
	b.Helper()
	if ran > time.Duration(*benchProfileSecs)*time.Second {
		b.Fatalf("the run took %v, longer than the profile (-acks.profilesecs %d)", ran, *benchProfileSecs)
	}
	if err := <-p.done; err != nil {
		b.Fatal(err)
	}
}

// profileFile is where the profile of a library run goes.
func profileFile(b *testing.B, mode string, workers int) string {
	b.Helper()
	if err := os.MkdirAll(*benchProfile, 0o755); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(*benchProfile, fmt.Sprintf("%s-workers=%d.pprof", mode, workers))
}

// BenchmarkProcessBatch: ConsumeBatch in this process (batches of 100, an
// empty handler, one worker) with ack records and without (subjects
// outside WithIdempotentSubjects), against a server in another process:
// what jsctl consume --batch 100 costs without its handler's processes.
// With -test.cpuprofile it shows where the client's time goes.
//
//	go test ./jsutil/acks -run '^$' -bench BenchmarkProcessBatch -benchtime 20000x
func BenchmarkProcessBatch(b *testing.B) {
	e := newProcEnv(b)
	run := 0
	for _, mode := range []string{"records", "norecords"} {
		b.Run(mode, func(b *testing.B) {
			run++
			name := fmt.Sprintf("PB%d", run)
			cons := e.fill(b, name, strings.ToLower(name), b.N)
			ctx := testCtx(b, 10*time.Minute)
			st, err := acks.Open(ctx, e.js, acks.WithBucket("ACKS_"+name))
			if err != nil {
				b.Fatal(err)
			}
			opts := []acks.ConsumeOption{acks.WithBatch(100, 100*time.Millisecond), acks.WithMaxMessages(b.N)}
			if mode == "norecords" {
				opts = append(opts, acks.WithIdempotentSubjects("none.>"))
			}
			h := func(_ context.Context, ds []acks.Delivery) ([]error, error) { return nil, nil }
			in, srvCPU, cliCPU := e.inMsgs(b), e.serverCPU(b), selfCPU()
			b.ResetTimer()
			start := time.Now()
			sum, err := st.ConsumeBatch(ctx, cons, h, opts...)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil || sum.Processed != b.N {
				b.Fatalf("%+v %v", sum, err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(e.inMsgs(b)-in)/float64(b.N), "in_msgs/msg")
			b.ReportMetric(float64(e.serverCPU(b)-srvCPU)/float64(b.N), "server_cpu_us/msg")
			b.ReportMetric(float64(selfCPU()-cliCPU)/float64(b.N), "client_cpu_us/msg")
		})
	}
}
