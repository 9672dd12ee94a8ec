// Package startup measures jsctl's start-up against a separate nats-server
// process: whole-process `jsctl seek` (a stream info and one message-get),
// `jsctl version` (no connection), one bare `nats req` (natscli) of the
// same message-get, and the least Go program that sends it (./req). Runs
// are interleaved, and the table gives the medians of wall time and of CPU
// time (user+system, which a busy machine disturbs less), the garbage
// collections one run makes (GODEBUG=gctrace=1) and the ratio to `nats req`.
//
// It runs only when asked (bench.sh asks):
//
//	go test ./internal/startup -run TestStartup -v -startup.runs 31 [-startup.nats PATH] [-startup.before JSCTL]
package startup

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	runs    = flag.Int("startup.runs", 0, "interleaved runs of each command (0: skip the measurement)")
	natsCLI = flag.String("startup.nats", "nats", "the natscli executable (the `nats req` row is left out when it is missing)")
	before  = flag.String("startup.before", "", "another jsctl executable (an earlier build) measured beside this one")
)

// row is one command line measured.
type row struct {
	name      string
	args      []string
	wall, cpu []time.Duration
	gcs       int
}

func TestStartup(t *testing.T) {
	if *runs <= 0 {
		t.Skip("a measurement: run with -startup.runs N (internal/startup/bench.sh)")
	}
	dir := t.TempDir()
	root := moduleRoot(t)
	jsctl, req := filepath.Join(dir, "jsctl"), filepath.Join(dir, "req")
	goBuild(t, root, jsctl, "./cmd/jsctl")
	goBuild(t, root, req, "./internal/startup/req")

	srv := natsproc.Start(t, natsproc.Options{})
	url := srv.URL()
	start := fillStream(t, url)
	subject, payload, requests := seekRequest(t, url, jsctl, start)

	rows := []*row{
		{name: "jsctl seek", args: []string{jsctl, "-s", url, "seek", "ORDERS", start}},
		{name: "jsctl version", args: []string{jsctl, "version"}},
	}
	if *before != "" {
		rows = append(rows,
			&row{name: "jsctl seek (before)", args: []string{*before, "-s", url, "seek", "ORDERS", start}},
			&row{name: "jsctl version (before)", args: []string{*before, "version"}})
	}
	if natsPath, err := exec.LookPath(*natsCLI); err == nil {
		rows = append(rows, &row{name: "nats req (natscli)", args: []string{natsPath, "-s", url, "req", subject, payload}})
	} else {
		t.Logf("no natscli (%v): the nats req row is left out", err)
	}
	rows = append(rows, &row{name: "Go program: connect, request", args: []string{req, url, subject, payload}})

	for _, r := range rows { // warm the page cache, count collections
		r.gcs = gcCount(t, r.args)
	}
	for i := 0; i < *runs; i++ {
		for _, r := range rows {
			wall, cpu := runOnce(t, r.args, nil)
			r.wall, r.cpu = append(r.wall, wall), append(r.cpu, cpu)
		}
	}

	base := rows[0]
	for _, r := range rows {
		if strings.HasPrefix(r.name, "nats req") {
			base = r
		}
	}
	fmt.Printf("jsctl seek sends %d requests: %s\n", len(requests), strings.Join(requests, ", "))
	fmt.Printf("nats req: %s %s\n", subject, payload)
	fmt.Printf("%d interleaved runs, medians\n\n", *runs)
	fmt.Printf("| %-30s | %9s | %9s | %4s | %15s | %14s |\n", "command", "wall", "CPU", "GCs", "wall / nats req", "CPU / nats req")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 32), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 6), strings.Repeat("-", 17), strings.Repeat("-", 16))
	for _, r := range rows {
		w, c := median(r.wall), median(r.cpu)
		fmt.Printf("| %-30s | %6.1f ms | %6.1f ms | %4d | %14.2f× | %13.2f× |\n", r.name, ms(w), ms(c), r.gcs,
			float64(w)/float64(median(base.wall)), float64(c)/float64(median(base.cpu)))
	}
}

// fillStream creates the stream ORDERS with 1,000 messages and returns
// the time of the 500th (RFC 3339, UTC), the time the commands seek.
func fillStream(t *testing.T, url string) string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 1000; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("orders.%d", i%10), fmt.Appendf(nil, "order %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishing 1,000 messages: no acknowledgement within a minute")
	}
	m, err := s.GetMsg(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	return m.Time.UTC().Format(time.RFC3339Nano)
}

// seekRequest runs `jsctl seek` once while listening on the JetStream API
// and returns the subject and payload of its first message-get, the one by
// time (what `nats req` sends), and the subjects of every request it sent.
func seekRequest(t *testing.T, url, jsctl, start string) (subject, payload string, requests []string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ch := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe("$JS.API.>", ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(jsctl, "-s", url, "seek", "ORDERS", start).CombinedOutput(); err != nil {
		t.Fatalf("jsctl seek: %v: %s", err, out)
	}
	if err := nc.Flush(); err != nil { // the server has routed what jsctl sent before it exited
		t.Fatal(err)
	}
	for len(ch) > 0 {
		m := <-ch
		requests = append(requests, m.Subject)
		if subject == "" && strings.HasPrefix(m.Subject, "$JS.API.STREAM.MSG.GET.") {
			subject, payload = m.Subject, string(m.Data)
		}
	}
	if subject == "" {
		t.Fatalf("jsctl seek sent no message-get (requests: %q)", requests)
	}
	return subject, payload, requests
}

// runOnce runs args and returns its wall time and CPU time.
func runOnce(t *testing.T, args, env []string) (wall, cpu time.Duration) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	wall = time.Since(began)
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// gcCount runs args once with GODEBUG=gctrace=1 and counts the garbage
// collections it reports.
func gcCount(t *testing.T, args []string) int {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "gc ") {
			n++
		}
	}
	return n
}

func goBuild(t *testing.T, root, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v: %s", pkg, err, b)
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
