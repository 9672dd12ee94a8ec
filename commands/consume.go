package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumeCmd runs a command once per message (or per batch), idempotently.
type ConsumeCmd struct {
	Stream             string        `arg:"" predictor:"stream" help:"Stream to consume."`
	Consumer           string        `arg:"" predictor:"consumer" help:"Durable pull consumer with explicit acks (must exist)."`
	Exec               string        `name:"exec" required:"" placeholder:"CMD" help:"Command run with sh -c (on Windows cmd /d /s /c; or --shell) once per message (or per batch with --batch): the payload on stdin, JSCTL_* variables in the environment. Exit 0 marks the message done."`
	Workers            int           `name:"workers" default:"1" placeholder:"N" help:"Commands run at once (at most 1000)."`
	Batch              int           `name:"batch" default:"0" placeholder:"N" help:"Run CMD once per batch of up to N messages (at most 10000), as NDJSON on its stdin (see Batches below); 0 = once per message."`
	BatchWait          time.Duration `name:"batch-wait" default:"100ms" placeholder:"D" help:"With --batch: how long a partial batch waits to fill."`
	Max                int           `name:"max" default:"0" placeholder:"N" help:"Stop after N deliveries handled (processed, duplicate or failed); 0 = no limit."`
	Idle               time.Duration `name:"idle" default:"0s" placeholder:"D" help:"Stop when no message arrived for D; 0 = never."`
	Lease              time.Duration `name:"lease" default:"30s" placeholder:"D" help:"Claim lease, renewed while CMD runs (whole seconds; at least 15s on a replicated bucket)."`
	Key                []string      `name:"key" sep:"none" placeholder:"SPEC" help:"Where the dedup key comes from: header:NAME, json:PATH, subject:N, subject or seq (repeatable: the parts are joined). Default header:Nats-Msg-Id; a message without it is keyed by its stream sequence."`
	KeyHeader          string        `name:"key-header" placeholder:"H" help:"Same as --key header:H."`
	KeyRequired        bool          `name:"key-required" help:"A message without its key fails for good (a failed record with the reason, the dead letter, terminated) instead of being keyed by its sequence."`
	Scope              string        `name:"scope" placeholder:"NAME" predictor:"scope" help:"Record scope, to share records between consumers of one stream (default STREAM.CONSUMER; at most 511 bytes)."`
	Bucket             string        `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"KV bucket of the ack records (created on first use)."`
	Retention          string        `name:"retention" default:"7d" placeholder:"D" help:"How long done and failed records are kept (a per-record TTL on the server; whole seconds, days allowed: 7d, 36h)."`
	Replicas           int           `name:"replicas" default:"0" placeholder:"N" help:"Replicas of the bucket when consume creates it (default: the stream's)."`
	Storage            string        `name:"storage" default:"file" enum:"file,memory" help:"Storage of the bucket when consume creates it: ${enum}."`
	OnDuplicate        string        `name:"on-duplicate" default:"skip" enum:"skip,run" help:"A message whose key is done: skip it (ack without running CMD), or run CMD with JSCTL_DUPLICATE=1: ${enum}."`
	OnMismatch         string        `name:"on-mismatch" default:"report" enum:"report,run,fail" help:"A message whose key is done for a different payload: report it (and treat it as --on-duplicate says), run CMD with JSCTL_MISMATCH=1, or fail it for good: ${enum}."`
	DeadLetter         string        `name:"dead-letter" placeholder:"SUBJECT" help:"Publish every message that fails for good to SUBJECT (a stream must capture it) before it is terminated."`
	IdempotentSubjects []string      `name:"idempotent-subjects" placeholder:"PATTERN" help:"Keep records only for subjects matching PATTERN (repeatable; default all). Others are processed at least once."`
	RetryDelay         time.Duration `name:"retry-delay" default:"1s" placeholder:"D" help:"First delay before a failed message is redelivered; it doubles with each failed delivery, up to 1m (at least 100ms)."`
	MaxFailures        int           `name:"max-failures" default:"0" placeholder:"N" help:"End a message that failed N times: keep a failed record and terminate it (default: the consumer's max deliver)."`
	StopTimeout        time.Duration `name:"stop-timeout" default:"10s" placeholder:"D" help:"On SIGINT/SIGTERM, how long running commands may finish before their process groups get SIGTERM (SIGKILL 5s later); a command so stopped is released, not failed."`
	Progress           bool          `name:"progress" default:"true" negatable:"" help:"At a terminal, show a status line on stderr (counts, rate, pending, lag); --no-progress or --progress=false turns it off."`
	shellFlag                        // --shell (exec_shell.go)
	serviceFlags                     // --metrics-listen, --metrics-linger (consume_service.go)
}

// Help is the long help of consume: short, so that the flags come soon;
// the handler's contract is the help topic "handler" (consumeHandlerHelp).
func (ConsumeCmd) Help() string {
	return `Runs CMD (through sh -c; on Windows cmd /d /s /c; or --shell) once per message of
a durable pull consumer, keeping an ack record per message in a JetStream KV
bucket, so a redelivered message (restart, lost ack, ack timeout, several workers,
a rewind) does not run CMD again. Exit 0 marks the message done; any other status
releases it for redelivery. --json prints one line per delivery and a summary.

What CMD gets (stdin, JSCTL_* variables), keys, duplicates, dead letters, batches
and stopping: jsctl help handler. Full page: docs/consume.md.

Examples:
  jsctl consume ORDERS billing --exec './bill.sh' --workers 8
  jsctl consume ORDERS billing --exec 'jq .total >> totals' --idle 10s --json
  jsctl consume ORDERS billing --exec 'curl -fsS --data-binary @- "$URL"' --key-header Order-Id
  jsctl consume ORDERS billing --exec ./bill.sh --key subject:2 --key json:order.id --key-required
  jsctl consume ORDERS billing --exec ./bill.sh --retention 30d --max-failures 5 --dead-letter dead.orders
  jsctl consume ORDERS billing --exec ./bill.sh --on-duplicate run --on-mismatch fail
  jsctl consume ORDERS audit --exec ./audit.sh --idempotent-subjects 'orders.*.paid'
  jsctl consume ORDERS loader --batch 100 --exec 'jq -c .data > batch.ndjson && ./load batch.ndjson'
  jsctl consume ORDERS billing --exec ./bill.sh --metrics-listen :9464 --log-format json`
}

// Validate checks the flags.
func (c *ConsumeCmd) Validate() error {
	switch {
	case c.Workers < 1 || c.Workers > acks.MaxWorkers:
		return jsutil.Errorf(jsutil.ErrBadInput, "--workers must be from 1 to %d, got %d", acks.MaxWorkers, c.Workers)
	case c.Max < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--max must not be negative, got %d", c.Max)
	case c.Idle < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--idle must not be negative, got %v", c.Idle)
	case c.Lease < time.Second || c.Lease%time.Second != 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--lease must be whole seconds, at least 1s, got %v", c.Lease)
	case c.RetryDelay < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--retry-delay must not be negative, got %v", c.RetryDelay)
	case c.StopTimeout < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--stop-timeout must not be negative, got %v", c.StopTimeout)
	case c.MaxFailures < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--max-failures must not be negative, got %d", c.MaxFailures)
	case c.Batch < 0 || c.Batch > acks.MaxBatch:
		return jsutil.Errorf(jsutil.ErrBadInput, "--batch must be from 0 to %d, got %d", acks.MaxBatch, c.Batch)
	case c.BatchWait < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--batch-wait must not be negative, got %v", c.BatchWait)
	case c.Replicas < 0 || c.Replicas > 5:
		return jsutil.Errorf(jsutil.ErrBadInput, "--replicas must be from 1 to 5, got %d", c.Replicas)
	case c.Exec == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--exec must not be empty")
	}
	if _, err := c.keySpecs(); err != nil {
		return err
	}
	if _, err := parseRetention(c.Retention); err != nil {
		return err
	}
	if _, err := c.handlerRun(c.Exec); err != nil {
		return err
	}
	return c.serviceFlags.validate()
}

// keySpecs reads --key (or its alias --key-header).
func (c *ConsumeCmd) keySpecs() ([]acks.KeySpec, error) {
	if c.KeyHeader != "" && len(c.Key) > 0 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "give --key or --key-header, not both (--key-header H is --key header:H)")
	}
	raw := c.Key
	if c.KeyHeader != "" {
		raw = []string{"header:" + c.KeyHeader}
	}
	if len(raw) == 0 {
		raw = []string{"header:" + acks.DefaultKeyHeader}
	}
	out := make([]acks.KeySpec, 0, len(raw))
	for _, r := range raw {
		k, err := acks.ParseKeySpec(r)
		if err != nil {
			return nil, fmt.Errorf("--key: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}

// parseRetention reads --retention: whole seconds, at least 1s.
func parseRetention(s string) (time.Duration, error) {
	d, err := jsutil.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--retention: %w", err)
	}
	if d < time.Second || d%time.Second != 0 {
		return 0, jsutil.Errorf(jsutil.ErrBadInput, "--retention must be whole seconds, at least 1s, got %s (the server counts TTLs in seconds)", s)
	}
	return d, nil
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
	Final      bool   `json:"final"`
	CannotRun  bool   `json:"cannot_run"`
	RetryMS    int64  `json:"retry_ms,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	KeySpec    string `json:"key_spec"`
	KeyMissing string `json:"key_missing,omitempty"`
	// DuplicateRun: CMD ran on a duplicate (--on-duplicate run,
	// --on-mismatch run).
	DuplicateRun bool `json:"duplicate_run,omitempty"`
	// The dead letter of a message that failed for good.
	DeadLetterStream string `json:"dead_letter_stream,omitempty"`
	DeadLetterSeq    uint64 `json:"dead_letter_seq,omitempty"`
	// ProtocolError: a batch command's result line was not well-formed
	// (the error quotes it; see batch_result.go).
	ProtocolError bool `json:"protocol_error,omitempty"`
}

// consumeSummaryJSON is consume's final --json line.
type consumeSummaryJSON struct {
	Summary struct {
		Stream   string `json:"stream"`
		Consumer string `json:"consumer"`
		Scope    string `json:"scope"`
		Bucket   string `json:"bucket"`
		acks.Summary
	} `json:"summary"`
}

// Run consumes until --max, --idle or a signal.
func (c *ConsumeCmd) Run(ctx context.Context, env *Env) error {
	env.stopsOnSignal = true
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
	// A consumer without a leader for now (just created on a cluster, an
	// election) does not answer: ask again for a while, as a consume that
	// runs for days should not die of a moment at its start.
	cons, err := jsutil.Consumer(ctx, cl.JS, c.Stream, c.Consumer)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		return jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on stream %q is a push consumer: consume needs a pull consumer", c.Consumer, c.Stream)
	}
	if err != nil {
		return jsutil.Wrap(err, "consume from consumer %q on stream %q", c.Consumer, c.Stream)
	}
	store, err := c.openBucket(ctx, cl.JS)
	if err != nil {
		return err
	}
	status := newConsumeStatus(env, c.Progress)
	status.watch(ctx, cons)
	stderr := status.writer(env.Stderr)
	lg := env.stderrLog().logger(stderr)                       // jsctl's lines, with fields for --log-format json
	svc, err := c.startService(ctx, env, cl, cons, lg, stderr) // --metrics-listen
	if err != nil {
		status.close()
		return err
	}
	defer svc.close()
	var mu sync.Mutex // serialises output lines and the commands' output
	out := &lockedWriter{mu: &mu, w: stderr}
	onResult := func(r acks.Result) {
		svc.result(r)
		status.add(r)
		mu.Lock()
		defer mu.Unlock()
		if p.JSON {
			_ = p.PrintJSONLine(consumeLineOf(r))
			return
		}
		logResult(lg, r)
	}
	keys, err := c.keySpecs()
	if err != nil {
		return err
	}
	opts := []acks.ConsumeOption{
		acks.WithScope(scope), acks.WithKey(keys...), acks.WithLease(c.Lease),
		acks.WithWorkers(c.Workers), acks.WithMaxMessages(c.Max), acks.WithIdle(c.Idle),
		acks.WithRetryDelay(c.RetryDelay), acks.WithMaxFailures(c.MaxFailures), acks.OnResult(onResult),
		acks.WithOnDuplicate(acks.DuplicatePolicy(c.OnDuplicate)), acks.WithOnMismatch(acks.MismatchPolicy(c.OnMismatch)),
		acks.WithDeadLetter(c.DeadLetter), acks.WithDrainTimeout(max(c.StopTimeout, time.Nanosecond)),
	}
	if c.KeyRequired {
		opts = append(opts, acks.WithKeyRequired())
	}
	if len(c.IdempotentSubjects) > 0 {
		opts = append(opts, acks.WithIdempotentSubjects(c.IdempotentSubjects...))
	}
	opts = append(opts, svc.options()...)
	run, err := c.handlerRun(c.Exec)
	if err != nil {
		return err
	}
	var sum acks.Summary
	h := execHandler{run: run, lingered: &lingerNotes{}, log: env.stderrLog()}
	if c.Batch > 0 {
		opts = append(opts, acks.WithBatch(c.Batch, c.BatchWait))
		sum, err = store.ConsumeBatch(ctx, cons, func(hctx context.Context, ds []acks.Delivery) ([]error, error) {
			defer svc.handlerStarted()()
			return h.runBatch(hctx, ds, out)
		}, opts...)
	} else {
		sum, err = store.Consume(ctx, cons, func(hctx context.Context, d acks.Delivery) error {
			defer svc.handlerStarted()()
			return h.runExec(hctx, d, out)
		}, opts...)
	}
	if w := h.lingered.warning(); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	svc.end(err)
	status.close()
	if err != nil && sum.Handled()+sum.Busy == 0 {
		return err
	}
	if perr := c.printSummary(p, env.Stderr, scope, sum); perr != nil {
		return perr
	}
	svc.lingerForScrape()
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d messages failed in this run (%s): %d terminated with a final failed record, %d will be redelivered",
			sum.Failed, sum.Processed+sum.Duplicates+sum.Failed, plural(sum.FailedDeliveries, "failed delivery", "failed deliveries"),
			sum.Terminated, max(sum.Failed-sum.Terminated, 0))
	}
	return nil
}

// openBucket opens the ack-record bucket, creating it with the stream's
// replica count unless --replicas says otherwise.
func (c *ConsumeCmd) openBucket(ctx context.Context, js jetstream.JetStream) (*acks.Store, error) {
	replicas := c.Replicas
	if replicas == 0 {
		// The bucket takes the stream's replicas. A stream that does not
		// answer for now is asked again: guessing 1 would create an R1
		// bucket for an R3 stream. Only a refused read leaves 1.
		replicas = 1
		st, err := jsutil.Stream(ctx, js, c.Stream) // its info, read once
		if err == nil && st.CachedInfo().Config.Replicas > 0 {
			replicas = st.CachedInfo().Config.Replicas
		}
		if err != nil && !errors.Is(err, jsutil.ErrPermission) {
			return nil, jsutil.Wrap(err, "read stream %q for the replicas of ack bucket %q", c.Stream, c.Bucket)
		}
	}
	retention, err := parseRetention(c.Retention)
	if err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if c.Storage == "memory" {
		storage = jetstream.MemoryStorage
	}
	return acks.Open(ctx, js, acks.WithBucket(c.Bucket), acks.WithReplicas(replicas), acks.WithRetention(retention), acks.WithStorage(storage))
}

func failNote(r acks.Result) string {
	switch {
	case r.Final && r.DeadLetterSeq != 0:
		return fmt.Sprintf("; terminated, dead-lettered as message %d of stream %s", r.DeadLetterSeq, r.DeadLetterStream)
	case r.Final && r.Idempotent && !r.Mismatch && !r.DuplicateRun: // duplicates keep their done record
		return "; terminated, a failed record is kept"
	case r.Final:
		return "; terminated"
	case r.Retry > 0:
		return fmt.Sprintf("; redelivered in %v", r.Retry.Round(time.Millisecond))
	}
	return ""
}

func (c *ConsumeCmd) printSummary(p *Printer, stderr io.Writer, scope string, sum acks.Summary) error {
	if p.JSON {
		var s consumeSummaryJSON
		s.Summary.Stream, s.Summary.Consumer, s.Summary.Scope, s.Summary.Bucket = c.Stream, c.Consumer, acks.ScopeDisplay(scope), c.Bucket
		s.Summary.Summary = sum
		return p.PrintJSONLine(s)
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(stderr, "jsctl: warning: %s\n", w)
	}
	p.Printf("processed %d", sum.Processed)
	if sum.DuplicateRuns > 0 {
		p.Printf(" (%s run again)", plural(sum.DuplicateRuns, "duplicate", "duplicates"))
	}
	p.Printf(", duplicates skipped %d, failed %d", sum.Duplicates, sum.Failed)
	if sum.FailedDeliveries != sum.Failed {
		p.Printf(" (%s)", plural(sum.FailedDeliveries, "failed delivery", "failed deliveries"))
	}
	if sum.Terminated > 0 {
		p.Printf(", terminated %d", sum.Terminated)
	}
	if sum.DeadLettered > 0 {
		p.Printf(", dead-lettered %d", sum.DeadLettered)
	}
	if sum.Released > 0 {
		p.Printf(", released %d", sum.Released)
	}
	p.Printf(", busy %d", sum.Busy)
	if sum.Mismatches > 0 {
		p.Printf(", payload mismatches %d", sum.Mismatches)
	}
	p.Printf(" (scope %s, floor %d)\n", acks.ScopeDisplay(scope), sum.Floor)
	return nil
}

func consumeLineOf(r acks.Result) consumeLineJSON {
	l := consumeLineJSON{
		Seq: r.Seq, Subject: r.Subject, Key: r.Key, Action: string(r.Action), Stream: r.Stream, Consumer: r.Consumer,
		Time: JSONTime(r.Time), Deliveries: r.Deliveries, Scope: acks.ScopeDisplay(r.Scope), KeyFrom: string(r.KeyFrom),
		Idempotent: r.Idempotent, Fence: r.Fence, Mismatch: r.Mismatch, RecordSeq: r.RecordSeq, BelowFloor: r.BelowFloor,
		LeaseLost: r.LeaseLost, Final: r.Final, CannotRun: r.CannotRun, RetryMS: r.Retry.Milliseconds(),
		DurationMS: r.Duration.Milliseconds(), KeySpec: r.KeySpec, KeyMissing: r.KeyMissing, DuplicateRun: r.DuplicateRun,
		DeadLetterStream: r.DeadLetterStream, DeadLetterSeq: r.DeadLetterSeq,
	}
	if r.Err != nil {
		l.Error = r.Err.Error()
		var pe *resultProtocolError
		l.ProtocolError = errors.As(r.Err, &pe)
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

// consumeHandlerHelp is "jsctl help handler": what consume's CMD gets and
// what its exit decides (docs/consume.md is the full page).
const consumeHandlerHelp = `Handlers: what the command of jsctl consume --exec CMD gets, and what it decides.

Runs CMD (through sh -c; on Windows cmd /d /s /c; or --shell) once per message of a
durable pull consumer, keeping an
ack record per message in a JetStream KV bucket, so a redelivered message
(restart, lost ack, ack timeout, several workers, a rewind) does not run CMD again.

CMD gets the payload on stdin and, in its environment: JSCTL_STREAM,
JSCTL_CONSUMER, JSCTL_SEQ, JSCTL_SUBJECT, JSCTL_TIME (RFC 3339, UTC), JSCTL_KEY
(the dedup key, escaped: printable characters as they are, a backslash as \\,
newline, tab and return as \n, \t, \r, other unprintable characters as \uXXXX
(\UXXXXXXXX beyond U+FFFF), bytes that are not UTF-8 as \xHH), JSCTL_KEY_B64 (the
key's raw bytes in base64), JSCTL_KEY_SPEC (what produced the key), JSCTL_FENCE
(the claim's revision: a fencing token that grows with every claim),
JSCTL_DELIVERIES and JSCTL_SCOPE. Message content never goes into the command
line. Exit 0 marks the message done; any other status releases it for redelivery
after --retry-delay, doubling per failed delivery. After --max-failures failed
deliveries (or the consumer's max deliver) the message fails for good: a failed
record is kept, the message is published to --dead-letter if given, then
terminated. CMD's output goes to jsctl's standard error.

CMD's exit decides, not its children: once CMD has exited, jsctl waits 1s for its
output to end, then judges by its exit status. A process CMD started that still
holds its stdout or stderr then gets SIGTERM and is named in a warning; one whose
output is redirected (cmd >/dev/null 2>&1 &) is left alone. CMD runs in its own
process group, and when jsctl stops CMD (a lost lease, --stop-timeout) the whole
group gets SIGTERM, then SIGKILL 5s later (on Windows: a job object of its own gets
CTRL_BREAK, then is terminated).

Keys (--key, repeatable; the parts of several are joined with "|", a "|" or "\"
inside a part escaped with "\"):
  header:NAME   a header's value (--key-header NAME is the same)
  json:PATH     a field of a JSON payload: order.id, items[0].sku, [2]
  subject:N     the Nth subject token, from 1; subject: the whole subject
  seq           the stream sequence
A message without its key is keyed by its stream sequence, or with --key-required
fails for good. Records keep the spec that made their key (jsctl acks get shows it).

A message whose claim another live worker holds is deferred (busy). A message whose
key is already done is acked without running CMD (duplicate), or with --on-duplicate
run, CMD runs with JSCTL_DUPLICATE=1, JSCTL_DUPLICATE_SEQ and JSCTL_DUPLICATE_TIME
(the earlier record's message and when it was done), holding no claim and changing
no record. A different payload under a done key is reported (--on-mismatch report),
run with JSCTL_MISMATCH=1 (run), or fails for good (fail).

Records are kept for --retention (a per-record TTL, 7 days by default); the
consumer's floor still marks their messages done after they expire. A bucket that
consume creates takes --retention, --replicas and --storage.

Dead letters (--dead-letter SUBJECT): the payload and headers (Nats-* headers renamed
Jsctl-Original-Nats-*) plus Jsctl-Stream, -Consumer, -Scope, -Sequence, -Subject,
-Time, -Key, -Key-B64, -Key-Spec, -Deliveries, -Failures and -Error, published under a
Nats-Msg-Id; the failed record names the dead letter. A crash at any point neither
loses a dead letter nor publishes it twice, within the dead-letter stream's duplicate
window (see the README).

Batches (--batch N): CMD runs once per batch of up to N messages. Its stdin has one
JSON line per message: stream, consumer, seq, subject, time, key (escaped as above),
key_b64, key_spec, fence, deliveries, headers, data and data_encoding ("text" when the
payload is valid UTF-8, else "base64"), and duplicate, duplicate_seq, duplicate_time
and mismatch for a duplicate run. Messages already done are acked and left out; every
message of the batch is claimed before CMD starts. Exit 0 marks the whole batch done,
any other status releases the whole batch. CMD may instead print one result line per
message on stdout, {"seq":N,"ok":true} or {"seq":N,"ok":false,"error":"..."}: then
only the failures are released (a message without a result line counts as failed).
A stdout line starting with "{" that is not such a line (seq a positive integer, ok
a boolean, error any JSON value, nothing after the object, at most 1 MiB) is a
protocol error: reported, and the messages it may concern fail (see the README).

Stopping: SIGINT/SIGTERM stop fetching and let running commands finish for
--stop-timeout (default 10s); then their process groups get SIGTERM. A command
ended so is released, not failed: its claim is given back (a failed record it
took over is written back with its count), the message is nak'd to run again at
once on its next delivery, and it counts toward neither --max-failures nor dead
letters (the summary says "released N"). A command that still exits 0 is done. No
claim is left behind. The exit status is 1 when a message failed in this run and
had not succeeded by its end (it will be redelivered, or it was terminated), else
0, whether a signal, --max or --idle stopped the run.

As a service: --metrics-listen ADDR serves Prometheus metrics on /metrics and health
on /healthz and /readyz; --log-format json writes every stderr line as a JSON object,
the command's output lines included (docs/consume.md).

--json prints one line per delivery ({"seq","subject","key","action":
processed|duplicate|failed|busy|released, ...}) and a final {"summary": {...}} line.

Full page: docs/consume.md.`
