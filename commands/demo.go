package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DemoCmd walks through the three jobs of jsctl on a throw-away server.
type DemoCmd struct {
	Messages int           `name:"messages" default:"24" placeholder:"N" help:"Orders to publish (at least 4)."`
	Gap      time.Duration `name:"gap" default:"100ms" placeholder:"D" help:"Time between two orders, so their timestamps differ."`
	Keep     bool          `name:"keep" help:"Keep the demo's store directory and print its path."`
}

// Help is the long help of demo.
func (DemoCmd) Help() string {
	return `Starts an in-process JetStream server over a temporary store, publishes a short
stream of orders, then runs the real jsctl commands against it:

  1. publish the orders and create the durable consumer "billing";
  2. consume: process every order once (ack records in a KV bucket);
  3. seek: find the exact sequence for a time in the middle, with its neighbours;
  4. consumer reset: plan a rewind of the consumer to that time;
  5. consumer reset --execute: apply it, verify it and record it in history;
  6. consume again: the replay runs no handler (every message is a duplicate);
  7. consumer reset --forget-acks and consume: exactly the forgotten range runs again.

Each step checks what it claims and the demo fails (exit 1) if a check does not
hold. Nothing is left behind unless --keep is given, whatever way the demo ends
(an error, Ctrl-C, a closed pipe such as "jsctl demo | head"). The output is
for people: --json is refused. Global flags such as --tz and --sync apply;
connection flags are ignored (the demo has its own server).

Examples:
  jsctl demo
  jsctl demo --tz Europe/Berlin --messages 40`
}

// Validate checks the flags.
func (c *DemoCmd) Validate() error {
	if c.Messages < 4 || c.Messages > 10000 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--messages must be from 4 to 10000, got %d", c.Messages)
	}
	if c.Gap < time.Millisecond || c.Gap > 10*time.Second {
		return jsutil.Errorf(jsutil.ErrBadInput, "--gap must be from 1ms to 10s, got %s", c.Gap)
	}
	return nil
}

// demo holds the state of one demo run.
type demo struct {
	ctx    context.Context
	env    *Env
	client *jsutil.Client
	out    io.Writer
	w      *demoWriter
	step   int
}

// written returns the error of the first write that failed, if any.
func (d *demo) written() error {
	if d.w != nil && d.w.err != nil {
		return fmt.Errorf("demo: write the output: %w; stopped, and nothing is left behind", d.w.err)
	}
	return nil
}

// demoWriter remembers the first failed write, so the demo stops (and
// cleans up) when nobody reads its output any more.
type demoWriter struct {
	w   io.Writer
	err error
}

func (d *demoWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.w.Write(p)
	if err != nil {
		d.err = err
	}
	return n, err
}

// Run runs the demo.
func (c *DemoCmd) Run(ctx context.Context, env *Env) (err error) {
	if env.Globals.JSON {
		return jsutil.Errorf(jsutil.ErrBadInput, "demo prints a walk-through for people and has no --json form; run it without --json")
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "jsctl-demo-")
	if err != nil {
		return fmt.Errorf("demo: create a store directory: %w", err)
	}
	sync, err := env.SyncPolicy()
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	srv, err := embedded.Start(embedded.Options{StoreDir: dir, Sync: sync})
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("demo: start the embedded server: %w", err)
	}
	client, err := jsutil.Connect(ctx, jsutil.ConnectOptions{InProcess: srv, InProcessName: "the demo's embedded server", Timeout: 10 * time.Second, Name: "jsctl demo"})
	if err != nil {
		srv.Shutdown()
		_ = os.RemoveAll(dir)
		return fmt.Errorf("demo: connect to the embedded server: %w", err)
	}
	defer func() {
		client.Close()
		srv.Shutdown()
		if c.Keep {
			return
		}
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("demo: remove the store %s: %w", dir, rerr)
		}
	}()
	w := &demoWriter{w: env.Stdout}
	d := &demo{ctx: ctx, env: env, client: client, out: w, w: w}
	fmt.Fprintf(d.out, "jsctl demo: the three jobs of jsctl on a throw-away embedded JetStream server.\n")
	if err := c.steps(d); err != nil {
		if ctx.Err() != nil { // Ctrl-C: say so, not "context canceled"
			return jsutil.Errorf(jsutil.ErrCancelled, "demo: interrupted")
		}
		return err
	}
	took := time.Since(start).Round(time.Millisecond)
	if c.Keep {
		fmt.Fprintf(d.out, "\nAll checks held. The demo took %s; its server is stopped and its store is kept in %s\n(look at it with: jsctl --embedded %s consumer ls ORDERS).\n", took, dir, quoteArgs([]string{dir}))
	} else {
		fmt.Fprintf(d.out, "\nAll checks held. The demo took %s; its server and store are gone.\n", took)
	}
	return d.written()
}

func (c *DemoCmd) steps(d *demo) error {
	n := c.Messages
	times, err := d.setup(n, c.Gap)
	if err != nil {
		return err
	}
	handler := `echo "handler ran for seq $JSCTL_SEQ" >&2`

	d.heading("Process every order once; ack records go to the KV bucket JSCTL_ACKS.")
	ran, err := d.consume(handler, n)
	if err != nil {
		return err
	}
	if err := d.proved(len(ran) == n && contiguous(ran, 1, n), "the handler ran once for each of sequences 1..%d", n); err != nil {
		return err
	}

	mid := n/2 + 1
	target := times[mid-2].Add(times[mid-1].Sub(times[mid-2]) / 2) // between orders mid-1 and mid
	targetArg := target.UTC().Format(time.RFC3339Nano)
	d.heading("Find the sequence for a wall-clock time between two orders, with its neighbours.")
	if _, err := d.run("seek", "ORDERS", targetArg, "--around", "2"); err != nil {
		return err
	}
	res, err := seek.Seek(d.ctx, d.client.JS, "ORDERS", target, seek.Options{})
	if err != nil {
		return err
	}
	if err := d.proved(res.Sequence == uint64(mid), "sequence %d is the first order at or after the time (order %d is just before it)", mid, mid-1); err != nil {
		return err
	}

	d.heading("Plan a rewind of consumer \"billing\" to that time (a plan changes nothing).")
	if _, err := d.run("consumer", "reset", "ORDERS", "billing", "--to-time", targetArg); err != nil {
		return err
	}
	d.heading("Execute it; jsctl verifies the consumer and records the change in its history.")
	if _, err := d.run("consumer", "reset", "ORDERS", "billing", "--to-time", targetArg, "--execute"); err != nil {
		return err
	}
	if err := d.nextDelivery(uint64(mid)); err != nil {
		return err
	}

	replay := n - mid + 1
	d.heading("Replay without --forget-acks: every replayed order is a duplicate, no handler runs.")
	ran, err = d.consume(handler, replay)
	if err != nil {
		return err
	}
	if err := d.proved(len(ran) == 0, "%d redelivered orders were acked without running the handler", replay); err != nil {
		return err
	}

	d.heading("Rewind again with --forget-acks, then replay: the forgotten range runs once more.")
	if _, err := d.run("consumer", "reset", "ORDERS", "billing", "--to-time", targetArg, "--execute", "--forget-acks"); err != nil {
		return err
	}
	ran, err = d.consume(handler, replay)
	if err != nil {
		return err
	}
	return d.proved(len(ran) == replay && contiguous(ran, mid, n), "the handler ran exactly once for each of sequences %d..%d, and for nothing else", mid, n)
}

// setup creates the stream and the consumer and publishes n orders gap
// apart; it returns their stored times.
func (d *demo) setup(n int, gap time.Duration) ([]time.Time, error) {
	js := d.client.JS
	d.heading(fmt.Sprintf("Publish %d orders %s apart to stream ORDERS; create the durable pull consumer \"billing\".", n, gap))
	if _, err := js.CreateStream(d.ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		return nil, jsutil.Wrap(err, "demo: create stream \"ORDERS\"")
	}
	regions := []string{"eu", "us", "apac"}
	times := make([]time.Time, 0, n)
	for i := 1; i <= n; i++ {
		if i > 1 {
			select {
			case <-time.After(gap):
			case <-d.ctx.Done():
				return nil, jsutil.Classify(jsutil.ErrCancelled, d.ctx.Err())
			}
		}
		m := nats.NewMsg("orders." + regions[i%len(regions)])
		m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("order-%04d", i))
		m.Data = fmt.Appendf(nil, `{"order":%d,"total":%d.%02d}`, i, 10+i*7%90, i*13%100)
		ack, err := js.PublishMsg(d.ctx, m)
		if err != nil {
			return nil, jsutil.Wrap(err, "demo: publish order %d", i)
		}
		sm, err := js.Stream(d.ctx, "ORDERS")
		if err != nil {
			return nil, jsutil.Wrap(err, "demo: get stream \"ORDERS\"")
		}
		raw, err := sm.GetMsg(d.ctx, ack.Sequence)
		if err != nil {
			return nil, jsutil.Wrap(err, "demo: get order %d", i)
		}
		times = append(times, raw.Time)
	}
	_, err := js.CreateConsumer(d.ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		Description: "billing service",
	})
	if err != nil {
		return nil, jsutil.Wrap(err, "demo: create consumer \"billing\"")
	}
	fmt.Fprintf(d.out, "  published sequences 1..%d from %s to %s\n", n, d.time(times[0]), d.time(times[n-1]))
	return times, nil
}

// consume runs `jsctl consume` until max messages were handled and returns
// the sequences the handler ran for (from the handler's own output).
func (d *demo) consume(handler string, max int) ([]int, error) {
	stderr, err := d.run("consume", "ORDERS", "billing", "--exec", handler, "--max", strconv.Itoa(max), "--idle", "10s")
	if err != nil {
		return nil, err
	}
	var ran []int
	handlerRan := regexp.MustCompile(`(?m)^handler ran for seq (\d+)$`) // compiled here, not at every jsctl start
	for _, m := range handlerRan.FindAllStringSubmatch(stderr, -1) {
		seq, _ := strconv.Atoi(m[1])
		ran = append(ran, seq)
	}
	fmt.Fprintf(d.out, "  the handler ran %d times\n", len(ran))
	return ran, nil
}

// nextDelivery checks, as a plain client would see it, that the consumer's
// next message is seq.
func (d *demo) nextDelivery(seq uint64) error {
	cons, err := d.client.JS.Consumer(d.ctx, "ORDERS", "billing")
	if err != nil {
		return jsutil.Wrap(err, "demo: get consumer \"billing\"")
	}
	info, err := cons.Info(d.ctx)
	if err != nil {
		return jsutil.Wrap(err, "demo: get consumer \"billing\"")
	}
	next := info.Delivered.Stream + 1
	return d.proved(next == seq, "consumer info says the next delivery is sequence %d", seq)
}

// run runs one jsctl command in-process against the demo's server, echoing
// the command line and its standard output; it returns its standard error.
func (d *demo) run(args ...string) (string, error) {
	fmt.Fprintf(d.out, "\n$ jsctl %s\n", quoteArgs(args))
	if err := d.written(); err != nil {
		return "", err
	}
	if d.env.Globals.TZ != "" {
		args = append(args, "--tz", d.env.Globals.TZ)
	}
	var stdout, stderr bytes.Buffer
	cli := &CLI{}
	env := &Env{Globals: &cli.Globals, Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Now: time.Now, client: d.client}
	parser, err := newParser(cli, env, &stdout, &stderr, onlyCommand(args)...)
	if err != nil {
		return "", err
	}
	kctx, err := parser.Parse(relativeTimeArgs(parser.Model, args))
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	kctx.BindTo(d.ctx, (*context.Context)(nil))
	err = kctx.Run()
	indent(d.out, stdout.String())
	if err != nil {
		indent(d.out, stderr.String())
		return "", fmt.Errorf("demo: jsctl %s: %w", quoteArgs(args), err)
	}
	return stderr.String(), nil
}

func (d *demo) heading(s string) {
	d.step++
	fmt.Fprintf(d.out, "\n%d. %s\n", d.step, s)
}

// proved prints what a step showed, or fails the demo when it did not hold.
func (d *demo) proved(ok bool, format string, args ...any) error {
	claim := fmt.Sprintf(format, args...)
	if !ok {
		return fmt.Errorf("demo: step %d: expected that %s, but it did not hold", d.step, claim)
	}
	fmt.Fprintf(d.out, "  proved: %s.\n", claim)
	return d.written()
}

func (d *demo) time(t time.Time) string {
	loc, err := d.env.Location()
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("15:04:05.000")
}

func indent(w io.Writer, s string) {
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		} else {
			fmt.Fprintln(w)
		}
	}
}

// contiguous reports whether seqs are exactly from..to, each once, in any order.
func contiguous(seqs []int, from, to int) bool {
	if len(seqs) != to-from+1 {
		return false
	}
	seen := make(map[int]bool, len(seqs))
	for _, s := range seqs {
		if s < from || s > to || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"$&;|<>()*?\\`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
