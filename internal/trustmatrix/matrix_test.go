package trustmatrix

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fault is what happens between the record and its use.
type fault string

const (
	fStream     fault = "stream recreated"
	fSame       fault = "consumer recreated, same config"
	fOtherCfg   fault = "consumer recreated, other config"
	fEdited     fault = "edited since"
	fUnparsable fault = "record does not parse"
	fOtherObj   fault = "record of another object"
	fHostile    fault = "hostile values"
)

// faults is every fault, in the matrix's column order.
var faults = []fault{fStream, fSame, fOtherCfg, fEdited, fUnparsable, fOtherObj, fHostile}

// kind is a cell's one outcome.
type kind int

const (
	// refused: the command exits with the code given (5, or 2 for a file
	// that is not a plan), nothing changed, nothing written.
	refused kind = iota + 1
	// skipped: the record is reported (stderr names it) and skipped; the
	// command does the rest of its work, and nothing is acted on wrongly.
	skipped
	// na: the fault cannot happen to what this command reads.
	na
	// used: the record is still true of the object after the fault and is
	// used as it is (a message done on the same stream is not run again).
	used
)

// expect is a cell's expected outcome.
type expect struct {
	kind kind
	// code is the exit code (refused; skipped: 0 unless set).
	code int
	// says is text stderr must hold (the refusal or the report).
	says string
	// why is the reason a cell does not apply.
	why string
}

func refuse(says string) expect               { return expect{kind: refused, code: 5, says: says} }
func refuseCode(code int, says string) expect { return expect{kind: refused, code: code, says: says} }
func skip(says string) expect                 { return expect{kind: skipped, says: says} }
func notApplicable(why string) expect         { return expect{kind: na, why: why} }

func skipCode(code int, says string) expect { return expect{kind: skipped, code: code, says: says} }

func (e expect) String() string {
	switch e.kind {
	case refused:
		return fmt.Sprintf("refused (%d)", e.code)
	case skipped:
		if e.code != 0 {
			return fmt.Sprintf("reported, skipped (%d)", e.code)
		}
		return "reported, skipped"
	case used:
		return "still true, used"
	}
	return "n/a"
}

// row is one command that reads recorded state.
type row struct {
	// name is how the matrix shows the row; command the command path of
	// the model it runs.
	name, command string
	// record makes the cell's objects and the record (setting c.bucket,
	// c.key and c.otherKey, or c.file), as the command's users make them.
	record func(c *cell)
	// use is the command line that reads the record.
	use func(c *cell) []string
	// garble, when set, writes the record that does not parse (default:
	// over the KV record or the file).
	garble func(c *cell)
	// hostile overwrites the record with hostile values.
	hostile func(c *cell)
	// other overwrites the record with one of the right shape for another
	// object (default: the record made for D, put under C's key or file).
	other func(c *cell)
	// acts: in a skipped cell the command changes state of its own (the
	// check says what); otherwise the state must stay as it was.
	acts bool
	// check, when set, checks a cell's run further.
	check func(c *cell, f fault, r result)
	// runWith, when set, runs the command itself and calls inject to
	// make the fault while the command runs (use is then not called).
	runWith func(c *cell, inject func()) result
	// streams lists the cell's streams whose state is compared (default S).
	streams func(c *cell) []string
	cells   map[fault]expect
}

// TestTrustMatrix runs every applicable cell of the matrix.
func TestTrustMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("trust matrix: runs nats-server and jsctl processes")
	}
	start := time.Now()
	const nServers = 3
	var servers [nServers]*server
	for i := range servers {
		servers[i] = startServer(t)
		warmBuckets(t, servers[i])
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	n := 0
	var mu sync.Mutex
	counts := map[string]int{}
	for _, r := range matrix() {
		for _, f := range faults {
			e := r.cells[f]
			if e.kind == na {
				continue
			}
			n++
			srv := servers[n%nServers]
			tok := fmt.Sprintf("X%03d", n)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				ran := false
				ok := t.Run(r.name+"/"+string(f), func(t *testing.T) { ran = true; runCell(t, srv, tok, r, f, e) })
				mu.Lock()
				if !ran {
					counts["filtered"]++
				} else if ok {
					counts["pass"]++
				} else {
					counts["fail"]++
				}
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	t.Logf("SUMMARY trust matrix: %d cells run (%d pass, %d fail) on %d servers in %s", n-counts["filtered"], counts["pass"], counts["fail"], nServers, time.Since(start).Round(10*time.Millisecond))
}

// warmBuckets has jsctl create its four buckets on s, as their users
// would, before the cells run at once (no cell races another to create
// one, and every bucket has jsctl's own configuration).
func warmBuckets(t *testing.T, s *server) {
	t.Helper()
	c := &cell{t: t, srv: s, js: s.js, tok: "W", home: t.TempDir(), S: "WARM", C: "w", vals: map[string]string{}}
	c.stream(c.S, 2, "warm")
	c.consumer(c.S, c.C)
	for _, args := range [][]string{
		{"consume", c.S, c.C, "--exec", "true", "--max", "1", "--no-progress"},
		{"consumer", "reset", c.S, c.C, "--to-seq", "1", "--execute"},
		{"consumer", "snapshot", "save", "warm", c.S, c.C},
	} {
		c.must(args...)
	}
}

func runCell(t *testing.T, srv *server, tok string, r row, f fault, e expect) {
	c := &cell{t: t, srv: srv, js: srv.js, tok: tok, home: t.TempDir(), S: "S" + tok, C: "c", D: "d", vals: map[string]string{"fault": string(f)}}
	r.record(c)
	streams := []string{c.S}
	if r.streams != nil {
		streams = r.streams(c)
	}
	var before state
	inject := func() {
		c.inject(r, f)
		before = c.state(streams...)
	}
	var res result
	if r.runWith != nil {
		res = r.runWith(c, inject)
	} else {
		c.inject(r, f)
		args := r.use(c) // may still prepare (publish, wait for a mirror)
		before = c.state(streams...)
		res = c.run(args...)
	}
	after := c.state(streams...)
	c.before, c.after = before, after
	if *show {
		t.Logf("%s", res)
	}
	if res.code != e.code {
		t.Fatalf("want %s, got exit %d:\n%s", e, res.code, res)
	}
	e.says = strings.ReplaceAll(e.says, "{key}", c.key)
	if e.says != "" && !strings.Contains(res.stderr, e.says) && !strings.Contains(res.stdout, e.says) {
		t.Errorf("want %s saying %q:\n%s", e, e.says, res)
	}
	if e.kind == skipped && e.says == "" && !strings.Contains(res.stderr, "warning") && !strings.Contains(res.stdout, "warning") && !strings.Contains(res.stdout, "(!)") {
		t.Errorf("skipped without a word:\n%s", res)
	}
	if e.kind == refused || (e.kind == skipped && !r.acts) {
		if d := before.diff(after); len(d) > 0 {
			t.Errorf("changed:\n  %s\n%s", strings.Join(d, "\n  "), res)
		}
		if w := writes(res.published, tok, false); len(w) > 0 {
			t.Errorf("published %v:\n%s", w, res)
		}
	} else if w := writes(res.published, tok, true); len(w) > 0 {
		t.Errorf("published %v:\n%s", w, res)
	}
	if e.kind == used && f == fEdited {
		// The record is used on the edited object: the edit stays.
		if ci := c.info(c.S, c.C); ci == nil || ci.Config.Description != "edited by an operator" || ci.Config.MaxAckPending != 77 {
			t.Errorf("the edit of %s was not kept: %+v\n%s", c.C, ci, res)
		}
	}
	if r.check != nil {
		r.check(c, f, res)
	}
}

// inject makes fault f happen to the cell's record.
func (c *cell) inject(r row, f fault) {
	switch f {
	case fStream:
		c.recreateStream()
	case fSame:
		c.recreateConsumer(false)
	case fOtherCfg:
		c.recreateConsumer(true)
	case fEdited:
		c.editConsumer()
	case fUnparsable:
		if r.garble != nil {
			r.garble(c)
			return
		}
		if k := c.vals["garbage"]; k != "" {
			c.kvPut(c.bucket, k, []byte("garbage{{"))
			return
		}
		c.garble()
	case fOtherObj:
		if r.other != nil {
			r.other(c)
		} else {
			c.otherRecord()
		}
	case fHostile:
		r.hostile(c)
	}
}

// writes lists the subjects among published that change something: any
// subject naming the cell's victim (V<tok>), and, unless records, every
// change of a stream, a consumer or a KV record.
func writes(published []string, tok string, records bool) []string {
	var out []string
	for _, s := range published {
		victim := strings.Contains(s, "V"+tok)
		change := strings.HasPrefix(s, "$KV.") || strings.HasPrefix(s, "$JS.ACK.") ||
			strings.HasPrefix(s, "$JS.API.STREAM.DELETE.") || strings.HasPrefix(s, "$JS.API.STREAM.PURGE.") || strings.HasPrefix(s, "$JS.API.STREAM.UPDATE.")
		for _, v := range []string{"CREATE", "DELETE", "RESET", "PAUSE"} {
			p := "$JS.API.CONSUMER." + v + "."
			if strings.HasPrefix(s, p) && !strings.HasPrefix(s, p+"KV_") {
				change = true
			}
		}
		if victim || (!records && change) {
			out = append(out, s)
		}
	}
	return out
}

// recreateStream deletes S and creates it again with the same
// configuration and 5 new messages (second-1..5); its consumers are added
// again with their configurations.
func (c *cell) recreateStream() {
	c.t.Helper()
	s, err := c.js.Stream(c.ctx(), c.S)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	var cons []jetstream.ConsumerConfig
	l := s.ListConsumers(c.ctx())
	for ci := range l.Info() {
		cons = append(cons, ci.Config)
	}
	if err := c.js.DeleteStream(c.ctx(), c.S); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.js.CreateStream(c.ctx(), cfg); err != nil {
		c.t.Fatal(err)
	}
	c.publish(c.S, 5, "second")
	c.vals["recreated"] = "yes"
	for _, cc := range cons {
		if _, err := c.js.CreateConsumer(c.ctx(), c.S, cc); err != nil {
			c.t.Fatal(err)
		}
	}
}

// recreateConsumer deletes C and adds it again: with the same
// configuration, or with another (ack wait, max ack pending, description).
func (c *cell) recreateConsumer(otherConfig bool) {
	c.t.Helper()
	ci := c.info(c.S, c.C)
	if ci == nil {
		c.t.Fatalf("no consumer %s/%s to recreate", c.S, c.C)
	}
	cfg := ci.Config
	if err := c.js.DeleteConsumer(c.ctx(), c.S, c.C); err != nil {
		c.t.Fatal(err)
	}
	if otherConfig {
		cfg.AckWait = 7 * time.Minute
		cfg.MaxAckPending = 77
		cfg.Description = "added again by someone else"
	}
	if _, err := c.js.CreateConsumer(c.ctx(), c.S, cfg); err != nil {
		c.t.Fatal(err)
	}
}

// editConsumer edits C in place (as an operator would: description and
// max ack pending).
func (c *cell) editConsumer() {
	c.t.Helper()
	ci := c.info(c.S, c.C)
	if ci == nil {
		c.t.Fatalf("no consumer %s/%s to edit", c.S, c.C)
	}
	cfg := ci.Config
	cfg.MaxAckPending = 77
	cfg.Description = "edited by an operator"
	if _, err := c.js.UpdateConsumer(c.ctx(), c.S, cfg); err != nil {
		c.t.Fatal(err)
	}
}

// garble overwrites the record with bytes that do not parse.
func (c *cell) garble() {
	c.t.Helper()
	if c.file != "" {
		if err := os.WriteFile(c.file, []byte("garbage{{"), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	c.kvPut(c.bucket, c.key, []byte("garbage{{"))
}

// otherRecord puts the record made for D under C's key (or file).
func (c *cell) otherRecord() {
	c.t.Helper()
	if c.file != "" {
		b, err := os.ReadFile(c.file + ".other")
		if err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(c.file, b, 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	val := c.kvGet(c.bucket, c.otherKey)
	if val == nil {
		c.t.Fatalf("no record %s in %s", c.otherKey, c.bucket)
	}
	c.kvPut(c.bucket, c.key, val)
}

// editRecord rewrites the record (KV or file) through edit.
func (c *cell) editRecord(edit func(m map[string]any)) {
	c.t.Helper()
	if c.file != "" {
		b, err := os.ReadFile(c.file)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(c.file, c.editJSON(b, edit), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	c.kvPut(c.bucket, c.key, c.editJSON(c.kvGet(c.bucket, c.key), edit))
}

// path is a file of the cell's.
func (c *cell) path(name string) string { return filepath.Join(c.home, name) }

var _ = json.Marshal
