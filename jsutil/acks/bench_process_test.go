//go:build unix

package acks_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The benchmarks against a separate nats-server process (built from the
// pinned module by internal/natsproc): the library with and without ack
// records at 1 and 16 workers, the CLI with --exec per message and with
// --batch 100, and the client's peak memory at two sizes. jsutil/acks/bench.sh
// runs them interleaved and prints one table.
var (
	benchJsctl   = flag.String("acks.jsctl", "", "a jsctl binary for the CLI benchmarks (jsutil/acks/bench.sh builds one)")
	benchMemMsgs = flag.String("acks.memmsgs", "10000,1000000", "message counts for BenchmarkProcessMemory")
)

// procEnv is a nats-server process and a connection to it.
type procEnv struct {
	srv *natsproc.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func newProcEnv(b *testing.B) *procEnv {
	b.Helper()
	var o natsproc.Options
	if *benchProfile != "" {
		o.Config = "prof_port: -1"
	}
	srv := natsproc.Start(b, o)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	return &procEnv{srv: srv, nc: nc, js: js}
}

// fill creates stream name (file storage, R1) with n messages on subject,
// each with a Nats-Msg-Id, and a durable pull consumer "c".
func (e *procEnv) fill(b *testing.B, name, subject string, n int) jetstream.Consumer {
	b.Helper()
	ctx := testCtx(b, 10*time.Minute)
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject + ".>"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	pending := make([]jetstream.PubAckFuture, 0, 4096)
	wait := func() {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal("publish timed out")
			}
		}
		pending = pending[:0]
	}
	for i := 0; i < n; i++ {
		m := nats.NewMsg(fmt.Sprintf("%s.%d", subject, i%16))
		m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s-%d", name, i))
		m.Data = fmt.Appendf(nil, `{"order":%d,"total":%d.5}`, i, i%100)
		f, err := e.js.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, f); len(pending) == cap(pending) {
			wait()
		}
	}
	wait()
	c, err := e.js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// inMsgs is the server's count of messages received from clients (/varz).
func (e *procEnv) inMsgs(b *testing.B) int64 {
	b.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", e.srv.HTTPPort))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs int64 `json:"in_msgs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v.InMsgs
}

// BenchmarkProcessLibrary: the library with ack records against two plain
// nats.go consumers that double-ack each message (no records), at 1 and 16
// workers, on a server in another process: "plain" fetches one message per
// worker at a time (Fetch), "prefetch" keeps nats.go's default pull buffer
// full (Messages). It reports messages per second and the server's inbound
// messages per processed message (requests, records, acks).
//
//	go test ./jsutil/acks -run '^$' -bench BenchmarkProcessLibrary -benchtime 20000x
func BenchmarkProcessLibrary(b *testing.B) {
	e := newProcEnv(b)
	run := 0
	for _, mode := range []string{"records", "plain", "prefetch"} {
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode, workers), func(b *testing.B) {
				run++
				name := fmt.Sprintf("B%d", run)
				cons := e.fill(b, name, strings.ToLower(name), b.N)
				ctx := testCtx(b, 10*time.Minute)
				var handled atomic.Int64
				h := func(context.Context, acks.Delivery) error { handled.Add(1); return nil }
				var st *acks.Store
				if mode == "records" {
					var err error
					if st, err = acks.Open(ctx, e.js, acks.WithBucket("ACKS_"+name)); err != nil {
						b.Fatal(err)
					}
				}
				var prof *serverProfile
				if *benchProfile != "" {
					file := profileFile(b, mode, workers)
					if err := os.WriteFile(strings.TrimSuffix(file, ".pprof")+".msgs", []byte(strconv.Itoa(b.N)+"\n"), 0o644); err != nil {
						b.Fatal(err)
					}
					prof = e.startProfile(b, e.profPort(b), file)
				}
				in, srvCPU, cliCPU := e.inMsgs(b), e.serverCPU(b), selfCPU()
				b.ResetTimer()
				start := time.Now()
				switch mode {
				case "records":
					sum, err := st.Consume(ctx, cons, h, acks.WithWorkers(workers), acks.WithMaxMessages(b.N))
					if err != nil || sum.Processed != b.N {
						b.Fatalf("%+v %v", sum, err)
					}
				case "plain":
					plainConsume(b, cons, workers, b.N, func() { handled.Add(1) })
				default:
					prefetchConsume(b, cons, workers, b.N, func() { handled.Add(1) })
				}
				elapsed := time.Since(start)
				b.StopTimer()
				srvCPUAfter := e.serverCPU(b)
				if prof != nil {
					prof.wait(b, time.Since(prof.start))
				}
				if int(handled.Load()) != b.N {
					b.Fatalf("handled %d of %d", handled.Load(), b.N)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(e.inMsgs(b)-in)/float64(b.N), "in_msgs/msg")
				b.ReportMetric(float64(srvCPUAfter-srvCPU)/float64(b.N), "server_cpu_us/msg")
				b.ReportMetric(float64(selfCPU()-cliCPU)/float64(b.N), "client_cpu_us/msg")
			})
		}
	}
}

// serverCPU is the CPU time the server process has used, in microseconds
// (user and system, from /proc; 10ms resolution).
func (e *procEnv) serverCPU(b *testing.B) int64 {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", e.srv.PID()))
	if err != nil {
		return 0 // not Linux: reported as 0
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime and stime are fields 14 and 15.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * 1e6 / 100 // USER_HZ is 100 on Linux
}

// selfCPU is the CPU time this process has used, in microseconds.
func selfCPU() int64 {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return int64(cpuMicros(&u))
}

// prefetchConsume is the baseline a user would write: nats.go's Messages
// with its default pull buffer (500 messages, refilled as it drains), the
// messages handed to workers that run the handler and double-ack each.
func prefetchConsume(b *testing.B, cons jetstream.Consumer, workers, n int, handle func()) {
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	msgs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				handle()
				if err := m.DoubleAck(context.Background()); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for range n {
		m, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		msgs <- m
	}
	close(msgs)
	wg.Wait()
}

// BenchmarkProcessCLI: jsctl consume as a process, with --exec per message
// and with --batch 100, with ack records and (--batch, subjects outside
// --idempotent-subjects) without.
//
//	go test ./jsutil/acks -run '^$' -bench BenchmarkProcessCLI -benchtime 2000x -acks.jsctl /tmp/jsctl
func BenchmarkProcessCLI(b *testing.B) {
	if *benchJsctl == "" {
		b.Skip("needs -acks.jsctl (jsutil/acks/bench.sh builds jsctl)")
	}
	e := newProcEnv(b)
	run := 0
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"exec", []string{"--exec", "cat >/dev/null"}},
		{"batch100", []string{"--batch", "100", "--exec", "cat >/dev/null"}},
		{"batch100-norecords", []string{"--batch", "100", "--exec", "cat >/dev/null", "--idempotent-subjects", "none.>"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			run++
			name := fmt.Sprintf("C%d", run)
			e.fill(b, name, strings.ToLower(name), b.N)
			in := e.inMsgs(b)
			b.ResetTimer()
			start := time.Now()
			use := runJsctl(b, e.srv.URL(), append([]string{"consume", name, "c", "--max", strconv.Itoa(b.N), "--bucket", "ACKS_" + name}, tc.args...)...)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(e.inMsgs(b)-in)/float64(b.N), "in_msgs/msg")
			b.ReportMetric(float64(use.Maxrss), "peak_rss_kb")
			b.ReportMetric(cpuMicros(use)/float64(b.N), "jsctl_cpu_us/msg")
		})
	}
}

// BenchmarkProcessMemory: the peak memory of a jsctl consume process
// (--batch 100, ack records) after 10,000 and after 1,000,000 messages.
//
//	go test ./jsutil/acks -run '^$' -bench BenchmarkProcessMemory -benchtime 1x -acks.jsctl /tmp/jsctl
func BenchmarkProcessMemory(b *testing.B) {
	if *benchJsctl == "" {
		b.Skip("needs -acks.jsctl (jsutil/acks/bench.sh builds jsctl)")
	}
	e := newProcEnv(b)
	for i, s := range strings.Split(*benchMemMsgs, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			name := fmt.Sprintf("M%d", i)
			e.fill(b, name, strings.ToLower(name), n)
			b.ResetTimer()
			start := time.Now()
			use := runJsctl(b, e.srv.URL(), "consume", name, "c", "--max", strconv.Itoa(n), "--bucket", "ACKS_"+name, "--batch", "100", "--exec", "cat >/dev/null")
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(use.Maxrss), "peak_rss_kb")
		})
	}
}

// runJsctl runs the benchmark's jsctl binary to the end and returns its
// resource usage (Maxrss: peak resident memory in KiB; its CPU times
// include the commands it ran).
func runJsctl(b *testing.B, url string, args ...string) *syscall.Rusage {
	b.Helper()
	cmd := exec.Command(*benchJsctl, args...)
	cmd.Env = append(os.Environ(), "NATS_URL="+url, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("jsctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage)
}

// cpuMicros is the user and system CPU time of a rusage, in microseconds
// (a Timeval's fields are int32 on some systems, int64 on others).
func cpuMicros(u *syscall.Rusage) float64 {
	return float64(u.Utime.Sec)*1e6 + float64(u.Utime.Usec) + float64(u.Stime.Sec)*1e6 + float64(u.Stime.Usec)
}
