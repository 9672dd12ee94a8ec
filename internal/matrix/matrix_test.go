// Package matrix runs jsctl's core scenarios against nats-server processes
// of every server version users run: the oldest jsctl supports and the
// newest patch of each minor release since (versionsTest), each built from
// its module version (natsproc.VersionBinary) and kept in the user's cache
// directory. One server process per version is shared by the scenarios,
// which run jsctl as a process (the test binary is jsctl when
// JSCTL_MATRIX_JSCTL is set) and assert the outcome the table of
// expectations (expect, in table_test.go) gives for that version: works,
// works by a fallback, or refused with a clear error. docs/server-versions.md's
// "Server versions" table is rendered from the same table
// (TestReadmeMatrixCurrent).
//
// A version that cannot be built (offline, build failure) fails the test
// under CI=true and skips it otherwise, with the reason. go test -short
// skips the servers.
package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsctlEnv, set to 1, makes the test binary run as jsctl.
const jsctlEnv = "JSCTL_MATRIX_JSCTL"

func TestMain(m *testing.M) {
	if os.Getenv(jsctlEnv) == "1" {
		os.Exit(commands.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// buildParallel bounds how many nats-server versions build at once.
const buildParallel = 2

// TestServerVersions runs every scenario against every version and logs
// the matrix it observed.
func TestServerVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("server version matrix: builds and runs nats-server processes")
	}
	versions := testVersions(t)
	start := time.Now()
	// Builds stop in time for the scenarios to run and report before the
	// test binary's deadline (a cold build of every version takes minutes).
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-2*time.Minute))
		defer cancel()
	}
	paths, errs := natsproc.BuildVersions(ctx, versions, buildParallel, t.Logf)
	t.Logf("nats-server binaries ready in %s", time.Since(start).Round(10*time.Millisecond))
	var mu sync.Mutex
	got := map[string]map[string]outcome{}
	t.Run("versions", func(t *testing.T) {
		for _, v := range versions {
			runVersion(t, v, paths[v], errs[v], func(row map[string]outcome) {
				mu.Lock()
				defer mu.Unlock()
				got[minorOf(v)] = row
			})
		}
	})
	t.Logf("observed matrix (version × scenario):\n%s", observedTable(versions, got))
	t.Logf("matrix test took %s", time.Since(start).Round(10*time.Millisecond))
}

// runVersion runs every scenario against a server of version (bin, or
// err when it could not be built), in parallel with the other versions,
// and reports what it saw.
func runVersion(t *testing.T, v, bin string, err error, report func(map[string]outcome)) {
	minor := minorOf(v)
	t.Run(minor, func(t *testing.T) {
		t.Parallel()
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("nats-server %s: %v", v, err)
			}
			t.Skipf("nats-server %s not available (CI would fail): %v", v, err)
		}
		start := time.Now()
		e := newEnv(t, v, bin)
		row := map[string]outcome{}
		defer func() {
			report(row)
			t.Logf("nats-server %s: scenarios took %s", v, time.Since(start).Round(10*time.Millisecond))
		}()
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				want := expect(minor, sc.name)
				obs := sc.run(e.child(t))
				row[sc.name] = obs.outcome
				if obs.outcome != want.outcome {
					t.Errorf("nats-server %s, %s: outcome %s (%s), want %s", v, sc.name, obs.outcome, obs.detail, want.outcome)
				}
				if want.outcome == unsupported {
					if obs.exit != want.exit || !strings.Contains(obs.stderr, want.says) {
						t.Errorf("nats-server %s, %s: exit %d, stderr %q; want exit %d saying %q", v, sc.name, obs.exit, obs.stderr, want.exit, want.says)
					}
				}
			})
		}
	})
}

// testVersions is versionsTest with the pinned version last.
func testVersions(t *testing.T) []string {
	t.Helper()
	pinned, err := natsproc.PinnedVersion()
	if err != nil {
		t.Fatal(err)
	}
	if minorOf(pinned) != minorOf(pinnedMinor) {
		t.Fatalf("the pinned nats-server is %s, but the matrix's newest row is %s: update versionsTest and the expectations", pinned, pinnedMinor)
	}
	return append(append([]string{}, versionsTest...), pinned)
}

// env is one nats-server process of a version and a client of it.
type env struct {
	t       *testing.T
	version string
	srv     *natsproc.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	home    string
}

func newEnv(t *testing.T, version, bin string) *env {
	t.Helper()
	srv := natsproc.Start(t, natsproc.Options{Binary: bin})
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, version: version, srv: srv, nc: nc, js: js, home: t.TempDir()}
}

// child is e for a subtest.
func (e *env) child(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// stream creates stream name (subjects name.>) with n messages on
// name.a and returns their store times, by sequence (times[0] is seq 1).
func (e *env) stream(name string, n int) []time.Time {
	e.t.Helper()
	s, err := e.js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}})
	if err != nil {
		e.t.Fatalf("create stream %s: %v", name, err)
	}
	for i := 1; i <= n; i++ {
		if _, err := e.js.Publish(e.ctx(), name+".a", fmt.Appendf(nil, "message %d", i)); err != nil {
			e.t.Fatal(err)
		}
	}
	var times []time.Time
	for i := 1; i <= n; i++ {
		m, err := s.GetMsg(e.ctx(), uint64(i))
		if err != nil {
			e.t.Fatal(err)
		}
		times = append(times, m.Time)
	}
	return times
}

// consumer creates a durable pull consumer with explicit acks.
func (e *env) consumer(stream, name string, policy jetstream.DeliverPolicy) jetstream.Consumer {
	e.t.Helper()
	c, err := e.js.CreateConsumer(e.ctx(), stream, jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: policy, AckWait: time.Minute,
	})
	if err != nil {
		e.t.Fatalf("create consumer %s: %v", name, err)
	}
	return c
}

// take fetches n messages of the consumer, acks them (waiting for the
// server's confirmation) and returns their stream sequences.
func (e *env) take(stream, name string, n int) []uint64 {
	e.t.Helper()
	c, err := e.js.Consumer(e.ctx(), stream, name)
	if err != nil {
		e.t.Fatal(err)
	}
	var seqs []uint64
	for len(seqs) < n {
		batch, err := c.Fetch(n-len(seqs), jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			e.t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				e.t.Fatal(err)
			}
			if err := m.DoubleAck(e.ctx()); err != nil {
				e.t.Fatal(err)
			}
			seqs = append(seqs, md.Sequence.Stream)
			got++
		}
		if batch.Error() != nil {
			e.t.Fatalf("fetch from %s: %v", name, batch.Error())
		}
		if got == 0 {
			e.t.Fatalf("fetch from %s: no message within 10s (have %v of %d)", name, seqs, n)
		}
	}
	return seqs
}

// jsctl runs `jsctl ARGS` against the server to the end and returns its
// exit code and output.
func (e *env) jsctl(args ...string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	var environ []string
	race := "atexit_sleep_ms=0" // a race build otherwise sleeps 1s at exit
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GORACE="):
			race = strings.TrimPrefix(kv, "GORACE=") + " " + race
		case !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "JSCTL_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME="):
			environ = append(environ, kv)
		}
	}
	cmd.Env = append(environ, jsctlEnv+"=1", "GORACE="+race, "NATS_URL="+e.srv.URL(), "HOME="+e.home,
		"XDG_CONFIG_HOME="+filepath.Join(e.home, ".config"), "JSCTL_TZ=UTC")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		e.t.Fatalf("run jsctl %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// minorOf is "2.10" for "v2.10.27".
func minorOf(version string) string {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}
