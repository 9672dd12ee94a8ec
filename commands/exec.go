package commands

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os/exec"
	"strconv"
	"unicode/utf8"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// execHandler runs a user's command (--exec) as the handler of consume and
// acks retry: once per message, or once per batch (see runProcess for how
// its process is run and stopped).
type execHandler struct {
	run handlerRun
	// lingered collects the messages whose command left a process
	// holding its output (nil: not reported).
	lingered *lingerNotes
	// log writes the command's output lines for --log-format json (nil:
	// as they are).
	log *stderrLog
}

// runExec runs --exec for one message. A command that cannot be started
// (its environment too large for the system, say) is not the command's own
// failure: acks.CannotRun has the message back off and end after a bound.
func (c execHandler) runExec(ctx context.Context, d acks.Delivery, out io.Writer) error {
	env := []string{
		"JSCTL_STREAM=" + d.Stream,
		"JSCTL_CONSUMER=" + d.Consumer,
		"JSCTL_SEQ=" + strconv.FormatUint(d.Seq, 10),
		"JSCTL_SUBJECT=" + Escape(d.Subject),
		"JSCTL_TIME=" + JSONTime(d.Time),
		"JSCTL_KEY=" + Escape(d.Key),
		"JSCTL_KEY_B64=" + base64.StdEncoding.EncodeToString([]byte(d.Key)),
		"JSCTL_KEY_SPEC=" + Escape(d.KeySpec),
		"JSCTL_FENCE=" + strconv.FormatUint(d.Fence, 10),
		"JSCTL_DELIVERIES=" + strconv.FormatUint(d.Deliveries, 10),
		"JSCTL_SCOPE=" + acks.ScopeDisplay(d.Scope),
	}
	if d.Duplicate {
		env = append(env, "JSCTL_DUPLICATE=1", "JSCTL_DUPLICATE_SEQ="+strconv.FormatUint(d.DuplicateOf, 10))
		if !d.DuplicateTime.IsZero() {
			env = append(env, "JSCTL_DUPLICATE_TIME="+JSONTime(d.DuplicateTime))
		}
	}
	if d.Mismatch {
		env = append(env, "JSCTL_MISMATCH=1")
	}
	if d.Retry {
		env = append(env, "JSCTL_RETRY=1")
	}
	stdout, stderr, done := c.log.handlerWriters(out, slog.Uint64("seq", d.Seq))
	lingered, _, err := runProcess(ctx, c.command(env...), d.Msg.Data(), stdout, stderr)
	done()
	if lingered {
		c.lingered.add(d.Seq)
	}
	return c.run.exitErr(err)
}

// exitErr is exitErr for this run: a program started without a shell
// that is gone when its turn comes fails as the shell's "not found" (exit
// status 127) would have, as the command's own failure.
func (r handlerRun) exitErr(err error) error {
	if len(r.argv) > 0 && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("command not found: %s (exit status 127, as a shell reports it)", r.argv[0])
	}
	return exitErr(err)
}

// exitErr turns a command's outcome into the handler's error.
func exitErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return errors.New(exitText(ee)) // exec_unix.go, exec_windows.go
	}
	return acks.CannotRun(fmt.Errorf("run command: %w", err))
}

// batchLineJSON is one message on a batch command's stdin.
type batchLineJSON struct {
	Stream       string              `json:"stream"`
	Consumer     string              `json:"consumer"`
	Seq          uint64              `json:"seq"`
	Subject      string              `json:"subject"`
	Time         string              `json:"time"`
	Key          string              `json:"key"`
	KeyB64       string              `json:"key_b64"`
	KeySpec      string              `json:"key_spec"`
	Fence        uint64              `json:"fence"`
	Deliveries   uint64              `json:"deliveries"`
	Headers      map[string][]string `json:"headers"`
	Data         string              `json:"data"`
	DataEncoding string              `json:"data_encoding"`
	// A duplicate run (--on-duplicate run, --on-mismatch run) and a retry.
	Duplicate     bool   `json:"duplicate,omitempty"`
	DuplicateSeq  uint64 `json:"duplicate_seq,omitempty"`
	DuplicateTime string `json:"duplicate_time,omitempty"`
	Mismatch      bool   `json:"mismatch,omitempty"`
	Retry         bool   `json:"retry,omitempty"`
}

// runBatch runs --exec once for a batch: NDJSON on stdin, result lines (if
// any) read from stdout as batch_result.go says; other output goes to
// jsctl's standard error.
func (c execHandler) runBatch(ctx context.Context, ds []acks.Delivery, out io.Writer) ([]error, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, d := range ds {
		if err := enc.Encode(batchLineOf(d)); err != nil {
			return nil, acks.CannotRun(fmt.Errorf("encode message %d: %w", d.Seq, err))
		}
	}
	pr, pw := io.Pipe()
	cmd := c.command(
		"JSCTL_STREAM="+ds[0].Stream,
		"JSCTL_CONSUMER="+ds[0].Consumer,
		"JSCTL_SCOPE="+acks.ScopeDisplay(ds[0].Scope),
		"JSCTL_BATCH_SIZE="+strconv.Itoa(len(ds)),
	)
	results := newBatchResults(ds, out)
	stdout, stderr, done := c.log.handlerWriters(out, slog.Uint64("first_seq", ds[0].Seq), slog.Uint64("last_seq", ds[len(ds)-1].Seq), slog.Int("batch_size", len(ds)))
	if stderr == nil {
		stderr = out
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		readBatchOutput(pr, stdout, results) // see batch_result.go
	}()
	lingered, cut, err := runProcess(ctx, cmd, in.Bytes(), pw, stderr)
	pw.Close()
	<-read
	done()
	if lingered {
		for _, d := range ds {
			c.lingered.add(d.Seq)
		}
	}
	if err != nil {
		return nil, c.run.exitErr(err)
	}
	if cut {
		// Its result lines may be among what was cut: its exit status
		// alone cannot say every message succeeded.
		results.cutOff(fmt.Errorf("the command's output was still arriving %v after it exited and was cut off before a result line for this message", handlerOutputLimit))
	}
	return results.errors(ds), nil
}

func batchLineOf(d acks.Delivery) batchLineJSON {
	l := batchLineJSON{
		Stream: d.Stream, Consumer: d.Consumer, Seq: d.Seq, Subject: d.Subject, Time: JSONTime(d.Time),
		Key: Escape(d.Key), KeyB64: base64.StdEncoding.EncodeToString([]byte(d.Key)), KeySpec: d.KeySpec, Fence: d.Fence,
		Deliveries: d.Deliveries, Headers: map[string][]string(d.Msg.Headers()),
		Duplicate: d.Duplicate, Mismatch: d.Mismatch, Retry: d.Retry,
	}
	if d.Duplicate {
		l.DuplicateSeq = d.DuplicateOf
		if !d.DuplicateTime.IsZero() {
			l.DuplicateTime = JSONTime(d.DuplicateTime)
		}
	}
	if l.Headers == nil {
		l.Headers = map[string][]string{}
	}
	data := d.Msg.Data()
	if utf8.Valid(data) {
		l.Data, l.DataEncoding = string(data), "text"
	} else {
		l.Data, l.DataEncoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return l
}
