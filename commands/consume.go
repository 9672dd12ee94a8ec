package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// ConsumeCmd runs a command once per message, idempotently.
type ConsumeCmd struct {
	Stream             string        `arg:"" predictor:"stream" help:"Stream to consume."`
	Consumer           string        `arg:"" predictor:"consumer" help:"Durable pull consumer with explicit acks (must exist)."`
	Exec               string        `name:"exec" required:"" placeholder:"CMD" help:"Command run with sh -c once per message: the payload on stdin, JSCTL_* variables in the environment. Exit 0 marks the message done."`
	Workers            int           `name:"workers" default:"1" placeholder:"N" help:"Messages handled at once."`
	Max                int           `name:"max" default:"0" placeholder:"N" help:"Stop after N messages handled (processed, duplicate or failed); 0 = no limit."`
	Idle               time.Duration `name:"idle" default:"0s" placeholder:"D" help:"Stop when no message arrived for D; 0 = never."`
	Lease              time.Duration `name:"lease" default:"30s" placeholder:"D" help:"Claim lease, renewed while CMD runs (whole seconds)."`
	KeyHeader          string        `name:"key-header" default:"Nats-Msg-Id" placeholder:"H" help:"Header holding the dedup key; messages without it are keyed by stream sequence."`
	Scope              string        `name:"scope" placeholder:"NAME" predictor:"scope" help:"Record scope, to share records between consumers of one stream (default STREAM.CONSUMER)."`
	Bucket             string        `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"KV bucket of the ack records (created on first use)."`
	IdempotentSubjects []string      `name:"idempotent-subjects" placeholder:"PATTERN" help:"Keep records only for subjects matching PATTERN (repeatable; default all). Others are processed at least once."`
	RetryDelay         time.Duration `name:"retry-delay" default:"0s" placeholder:"D" help:"Delay before a failed message is redelivered (0 = at once)."`
}

// Help is the long help of consume.
func (ConsumeCmd) Help() string {
	return `Runs CMD (through sh -c) once per message of a durable pull consumer, keeping an
ack record per message in a JetStream KV bucket, so a redelivered message
(restart, lost ack, ack timeout, several workers, a rewind) does not run CMD again.

CMD gets the payload on stdin and, in its environment: JSCTL_STREAM, JSCTL_CONSUMER,
JSCTL_SEQ, JSCTL_SUBJECT, JSCTL_TIME (RFC 3339, UTC), JSCTL_KEY (the dedup key),
JSCTL_FENCE (the claim's revision: a fencing token that grows with every claim),
JSCTL_DELIVERIES and JSCTL_SCOPE. Message content never goes into the command line.
Exit 0 marks the message done; any other status releases it for redelivery. CMD's
output goes to jsctl's standard error.

A message whose claim another live worker holds is deferred (busy). A message whose
key is already done is acked without running CMD (duplicate); a different payload
under a done key is reported. SIGINT/SIGTERM stop fetching, let running commands
finish (up to --lease, then they get SIGTERM) and leave no claim behind; the exit
status is then 0. It is 1 when any message failed in this run (it will be
redelivered).

--json prints one line per message ({"seq","subject","key","action":
processed|duplicate|failed|busy, ...}) and a final {"summary": {...}} line.

Examples:
  jsctl consume ORDERS billing --exec './bill.sh' --workers 8
  jsctl consume ORDERS billing --exec 'jq .total >> totals' --idle 10s --json
  jsctl consume ORDERS billing --exec 'curl -fsS --data-binary @- "$URL"' --key-header Order-Id
  jsctl consume ORDERS audit --exec ./audit.sh --idempotent-subjects 'orders.*.paid'`
}

// Validate checks the flags.
func (c *ConsumeCmd) Validate() error {
	switch {
	case c.Workers < 1:
		return jsutil.Errorf(jsutil.ErrBadInput, "--workers must be at least 1, got %d", c.Workers)
	case c.Max < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--max must not be negative, got %d", c.Max)
	case c.Idle < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--idle must not be negative, got %v", c.Idle)
	case c.Lease < time.Second || c.Lease%time.Second != 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--lease must be whole seconds, at least 1s, got %v", c.Lease)
	case c.RetryDelay < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--retry-delay must not be negative, got %v", c.RetryDelay)
	case c.Exec == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--exec must not be empty")
	case c.KeyHeader == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--key-header must not be empty")
	}
	return nil
}

// consumeLineJSON is one message in consume's --json output.
type consumeLineJSON struct {
	Seq        uint64 `json:"seq"`
	Subject    string `json:"subject"`
	Key        string `json:"key"`
	Action     string `json:"action"`
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	Time       string `json:"time"`
	Deliveries uint64 `json:"deliveries"`
	Scope      string `json:"scope"`
	KeyFrom    string `json:"key_from"`
	Idempotent bool   `json:"idempotent"`
	Fence      uint64 `json:"fence"`
	Mismatch   bool   `json:"mismatch"`
	RecordSeq  uint64 `json:"record_seq,omitempty"`
	BelowFloor bool   `json:"below_floor"`
	LeaseLost  bool   `json:"lease_lost"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// consumeSummaryJSON is consume's final --json line.
type consumeSummaryJSON struct {
	Summary struct {
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		Scope      string `json:"scope"`
		Bucket     string `json:"bucket"`
		Processed  int    `json:"processed"`
		Duplicates int    `json:"duplicates"`
		Failed     int    `json:"failed"`
		Busy       int    `json:"busy"`
		Mismatches int    `json:"mismatches"`
		Floor      uint64 `json:"floor"`
	} `json:"summary"`
}

// Run consumes until --max, --idle or a signal.
func (c *ConsumeCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	scope := acks.DefaultScope(c.Stream, c.Consumer)
	if c.Scope != "" {
		scope = acks.ScopeName(c.Scope)
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	cons, err := cl.JS.Consumer(ctx, c.Stream, c.Consumer)
	if err != nil {
		return jsutil.Wrap(err, "consume from consumer %q on stream %q", c.Consumer, c.Stream)
	}
	store, err := acks.Open(ctx, cl.JS, acks.WithBucket(c.Bucket))
	if err != nil {
		return err
	}
	var mu sync.Mutex // serialises output lines and the commands' output
	out := &lockedWriter{mu: &mu, w: env.Stderr}
	onResult := func(r acks.Result) {
		mu.Lock()
		defer mu.Unlock()
		if p.JSON {
			_ = p.PrintJSONLine(consumeLineOf(r))
			return
		}
		switch {
		case r.Action == acks.Failed && r.Err != nil:
			fmt.Fprintf(env.Stderr, "jsctl: message %d (%s): failed: %v\n", r.Seq, r.Subject, r.Err)
		case r.Mismatch:
			fmt.Fprintf(env.Stderr, "jsctl: message %d (%s): key %q was done for message %d with a different payload; skipped as a duplicate\n", r.Seq, r.Subject, r.Key, r.RecordSeq)
		}
	}
	handler := func(hctx context.Context, d acks.Delivery) error {
		return c.runExec(hctx, d, out)
	}
	opts := []acks.ConsumeOption{
		acks.WithScope(scope), acks.WithKeyHeader(c.KeyHeader), acks.WithLease(c.Lease),
		acks.WithWorkers(c.Workers), acks.WithMaxMessages(c.Max), acks.WithIdle(c.Idle),
		acks.WithRetryDelay(c.RetryDelay), acks.OnResult(onResult),
	}
	if len(c.IdempotentSubjects) > 0 {
		opts = append(opts, acks.WithIdempotentSubjects(c.IdempotentSubjects...))
	}
	sum, err := store.Consume(ctx, cons, handler, opts...)
	if err != nil && sum.Handled()+sum.Busy == 0 {
		return err
	}
	if p.JSON {
		var s consumeSummaryJSON
		s.Summary.Stream, s.Summary.Consumer, s.Summary.Scope, s.Summary.Bucket = c.Stream, c.Consumer, acks.ScopeDisplay(scope), c.Bucket
		s.Summary.Processed, s.Summary.Duplicates, s.Summary.Failed = sum.Processed, sum.Duplicates, sum.Failed
		s.Summary.Busy, s.Summary.Mismatches, s.Summary.Floor = sum.Busy, sum.Mismatches, sum.Floor
		if perr := p.PrintJSONLine(s); perr != nil {
			return perr
		}
	} else {
		p.Printf("processed %d, duplicates skipped %d, failed %d, busy %d", sum.Processed, sum.Duplicates, sum.Failed, sum.Busy)
		if sum.Mismatches > 0 {
			p.Printf(", payload mismatches %d", sum.Mismatches)
		}
		p.Printf(" (scope %s, floor %d)\n", acks.ScopeDisplay(scope), sum.Floor)
	}
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d messages failed in this run (they will be redelivered)", sum.Failed, sum.Handled())
	}
	return nil
}

// runExec runs --exec for one message. The command runs in its own process
// group, so a terminal's Ctrl-C reaches only jsctl, which lets it finish;
// a lost lease (or the drain timeout) stops it with SIGTERM, then SIGKILL.
func (c *ConsumeCmd) runExec(ctx context.Context, d acks.Delivery, out io.Writer) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Exec)
	cmd.Stdin = bytes.NewReader(d.Msg.Data())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"JSCTL_STREAM="+d.Stream,
		"JSCTL_CONSUMER="+d.Consumer,
		"JSCTL_SEQ="+strconv.FormatUint(d.Seq, 10),
		"JSCTL_SUBJECT="+d.Subject,
		"JSCTL_TIME="+JSONTime(d.Time),
		"JSCTL_KEY="+d.Key,
		"JSCTL_FENCE="+strconv.FormatUint(d.Fence, 10),
		"JSCTL_DELIVERIES="+strconv.FormatUint(d.Deliveries, 10),
		"JSCTL_SCOPE="+acks.ScopeDisplay(d.Scope),
	)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("command exited with status %d", ee.ExitCode())
		}
		return fmt.Errorf("run command: %w", err)
	}
	return nil
}

func consumeLineOf(r acks.Result) consumeLineJSON {
	l := consumeLineJSON{
		Seq: r.Seq, Subject: r.Subject, Key: r.Key, Action: string(r.Action), Stream: r.Stream, Consumer: r.Consumer,
		Time: JSONTime(r.Time), Deliveries: r.Deliveries, Scope: acks.ScopeDisplay(r.Scope), KeyFrom: string(r.KeyFrom),
		Idempotent: r.Idempotent, Fence: r.Fence, Mismatch: r.Mismatch, RecordSeq: r.RecordSeq, BelowFloor: r.BelowFloor,
		LeaseLost: r.LeaseLost, DurationMS: r.Duration.Milliseconds(),
	}
	if r.Err != nil {
		l.Error = r.Err.Error()
	}
	return l
}

// lockedWriter serialises writes from concurrent commands.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
