package matrix

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// outcome is how a scenario went on a version.
type outcome string

const (
	pass        outcome = "pass"        // works with the server's own API
	fallback    outcome = "fallback"    // works by another way (recreate, client-side search)
	unsupported outcome = "unsupported" // refused with a clear error, nothing changed
	failed      outcome = "failed"      // anything else: a defect
)

// observation is what a scenario saw.
type observation struct {
	outcome outcome
	detail  string
	exit    int
	stderr  string
}

// scenario is one column of the matrix: it sets up its own stream on the
// shared server, runs jsctl and checks the exact result.
type scenario struct {
	name string
	run  func(e *env) observation
}

var scenarios = []scenario{
	{"seek", seekScenario},
	{"reset", resetScenario},
	{"recreate", recreateScenario},
	{"pause", pauseScenario},
	{"reset --pause", resetPauseScenario},
	{"snapshot restore", snapshotScenario},
	{"consume", consumeScenario},
}

// refused is the observation of a jsctl run that failed.
func refused(code int, stderr string) observation {
	return observation{outcome: unsupported, detail: strings.TrimSpace(stderr), exit: code, stderr: stderr}
}

// seekScenario: `seek` finds the sequence for a message's time, with the
// server's time index (start_time) or, where the server ignores it, a
// client-side binary search.
func seekScenario(e *env) observation {
	times := e.stream("SEEK", 10)
	target := times[5]
	want := uint64(6)
	for i, tm := range times { // the first message at or after the target
		if !tm.Before(target) {
			want = uint64(i + 1)
			break
		}
	}
	code, out, errs := e.jsctl("seek", "SEEK", target.Format(time.RFC3339Nano), "--json")
	if code != 0 {
		return refused(code, errs)
	}
	var r struct {
		Sequence uint64 `json:"sequence"`
		Strategy string `json:"strategy"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		e.t.Fatalf("seek --json: %v\n%s", err, out)
	}
	if r.Sequence != want {
		e.t.Errorf("seek found sequence %d, want %d", r.Sequence, want)
	}
	switch r.Strategy {
	case "server":
		return observation{outcome: pass, detail: "server time index"}
	case "bisect":
		return observation{outcome: fallback, detail: "client-side binary search"}
	}
	return observation{outcome: failed, detail: "strategy " + r.Strategy}
}

// resetScenario: `consumer reset` moves a consumer with deliver policy all
// back to sequence 3: in place, or by a recreate where the server has no
// reset API.
func resetScenario(e *env) observation {
	e.stream("RESET", 10)
	e.consumer("RESET", "c", jetstream.DeliverAllPolicy)
	e.take("RESET", "c", 8)
	return e.resetTo("RESET", "c", 3, "reset")
}

// recreateScenario: a consumer with deliver policy new can be reset in
// place only to its ack floor, so moving it back is a recreate everywhere.
func recreateScenario(e *env) observation {
	e.stream("RECREATE", 10)
	e.consumer("RECREATE", "c", jetstream.DeliverNewPolicy)
	for i := 0; i < 5; i++ { // published after the consumer: delivered to it
		if _, err := e.js.Publish(e.ctx(), "RECREATE.a", []byte("new")); err != nil {
			e.t.Fatal(err)
		}
	}
	e.take("RECREATE", "c", 5)
	return e.resetTo("RECREATE", "c", 12, "recreate")
}

// resetTo resets the consumer to seq with jsctl (plus extra flags) and
// checks that the change was applied and verified and that the next
// delivery is seq: pass when the method was inPlace's ("reset" for the
// server's API, "recreate" where that is the only way), fallback when the
// server made jsctl recreate instead.
func (e *env) resetTo(stream, name string, seq uint64, want string, extra ...string) observation {
	e.t.Helper()
	args := append([]string{"consumer", "reset", stream, name, "--to-seq", fmt.Sprint(seq), "--execute", "--json"}, extra...)
	code, out, errs := e.jsctl(args...)
	if code != 0 {
		return refused(code, errs)
	}
	method, reason := e.changed(out)
	if got := e.take(stream, name, 1); got[0] != seq {
		e.t.Errorf("after the reset the next delivery is %d, want %d", got[0], seq)
	}
	switch {
	case method == want:
		return observation{outcome: pass, detail: method}
	case method == "recreate":
		e.noResetAPI(stream, name, reason)
		return observation{outcome: fallback, detail: method}
	}
	return observation{outcome: failed, detail: "method " + method}
}

// noResetAPI checks a recreate made for want of the reset API: the plan
// says so, and --method reset is refused (exit 5) with that reason.
func (e *env) noResetAPI(stream, name, reason string) {
	e.t.Helper()
	const says = "has no consumer reset API (nats-server 2.14 or later)"
	if !strings.Contains(reason, says) {
		e.t.Errorf("the recreate's reason is %q, want it to say %q", reason, says)
	}
	code, _, errs := e.jsctl("consumer", "reset", stream, name, "--to-seq", "2", "--method", "reset")
	if code != 5 || !strings.Contains(errs, says) {
		e.t.Errorf("--method reset: exit %d, %q; want exit 5 saying %q", code, errs, says)
	}
}

// changed checks jsctl's JSON result of one executed change (a reset or a
// restore) and returns its method and the reason for it.
func (e *env) changed(out string) (string, string) {
	e.t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		e.t.Fatalf("jsctl --json: %v\n%s", err, out)
	}
	var changes []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if cs, ok := v["changes"].([]any); ok {
				for _, c := range cs {
					if m, ok := c.(map[string]any); ok {
						changes = append(changes, m)
					}
				}
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if len(changes) != 1 {
		e.t.Fatalf("want one change in jsctl's result, got %d:\n%s", len(changes), out)
	}
	c := changes[0]
	if c["applied"] != true || c["verified"] != true {
		e.t.Errorf("change not applied and verified:\n%s", out)
	}
	method, _ := c["method"].(string)
	reason, _ := c["reason"].(string)
	return method, reason
}

// pauseScenario: `consumer pause` and `resume` with the server's pause
// API.
func pauseScenario(e *env) observation {
	e.stream("PAUSE", 3)
	c := e.consumer("PAUSE", "c", jetstream.DeliverAllPolicy)
	code, out, errs := e.jsctl("consumer", "pause", "PAUSE", "c", "--for", "1h", "--json", "--execute")
	if code != 0 {
		if ci, err := c.Info(e.ctx()); err != nil || ci.Paused {
			e.t.Errorf("after a refused pause: paused %v, %v", ci != nil && ci.Paused, err)
		}
		return refused(code, errs)
	}
	var doc struct {
		Executed  bool `json:"executed"`
		Consumers []struct {
			Paused bool `json:"paused"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !doc.Executed || len(doc.Consumers) != 1 || !doc.Consumers[0].Paused {
		e.t.Errorf("pause --json --execute: %+v, %v\n%s", doc, err, out)
	}
	if ci, err := c.Info(e.ctx()); err != nil || !ci.Paused {
		e.t.Errorf("after pause the server reports paused=%v (%v)", ci != nil && ci.Paused, err)
	}
	if code, _, errs := e.jsctl("consumer", "resume", "PAUSE", "c", "--json", "--execute"); code != 0 {
		e.t.Errorf("resume exited %d: %s", code, errs)
	}
	if ci, err := c.Info(e.ctx()); err != nil || ci.Paused {
		e.t.Errorf("after resume the server reports paused=%v (%v)", ci != nil && ci.Paused, err)
	}
	if got := e.take("PAUSE", "c", 1); got[0] != 1 {
		e.t.Errorf("after resume the first delivery is %d, want 1", got[0])
	}
	return observation{outcome: pass, detail: "pause API"}
}

// resetPauseScenario: `consumer reset --pause` pauses the consumer for the
// move; without a pause API it must refuse with nothing changed.
func resetPauseScenario(e *env) observation {
	e.stream("RPAUSE", 10)
	c := e.consumer("RPAUSE", "c", jetstream.DeliverAllPolicy)
	e.take("RPAUSE", "c", 8)
	obs := e.resetTo("RPAUSE", "c", 3, "reset", "--pause")
	if obs.outcome == unsupported {
		ci, err := c.Info(e.ctx())
		if err != nil || ci.AckFloor.Stream != 8 || ci.Delivered.Stream != 8 || ci.Paused {
			e.t.Errorf("after a refused reset --pause the consumer changed: %+v, %v", ci, err)
		}
	}
	if ci, err := c.Info(e.ctx()); err == nil && ci.Paused {
		e.t.Errorf("the consumer is still paused after reset --pause")
	}
	return obs
}

// snapshotScenario: `consumer snapshot save`, the consumer moves on, and
// `snapshot restore --execute` moves it back to the saved ack floor + 1.
func snapshotScenario(e *env) observation {
	e.stream("SNAP", 10)
	e.consumer("SNAP", "c", jetstream.DeliverAllPolicy)
	e.take("SNAP", "c", 5)
	if code, _, errs := e.jsctl("consumer", "snapshot", "save", "before", "SNAP", "c"); code != 0 {
		return refused(code, errs)
	}
	e.take("SNAP", "c", 3)
	code, out, errs := e.jsctl("consumer", "snapshot", "restore", "before", "--execute", "--json")
	if code != 0 {
		return refused(code, errs)
	}
	method, reason := e.changed(out)
	if got := e.take("SNAP", "c", 1); got[0] != 6 {
		e.t.Errorf("after the restore the next delivery is %d, want 6", got[0])
	}
	switch method {
	case "reset":
		return observation{outcome: pass, detail: method}
	case "recreate":
		e.noResetAPI("SNAP", "c", reason)
		return observation{outcome: fallback, detail: method}
	}
	return observation{outcome: failed, detail: "method " + method}
}

// consumeScenario: `consume` runs a command per message and keeps ack
// records; after a rewind the same messages are acked as duplicates
// without running the command again.
func consumeScenario(e *env) observation {
	e.stream("WORK", 5)
	e.consumer("WORK", "c", jetstream.DeliverAllPolicy)
	summary := func() (map[string]any, observation) {
		code, out, errs := e.jsctl("consume", "WORK", "c", "--exec", "cat >/dev/null", "--max", "5", "--json")
		if code != 0 {
			return nil, refused(code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last struct {
			Summary map[string]any `json:"summary"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Summary == nil {
			e.t.Fatalf("consume --json: no summary line (%v):\n%s", err, out)
		}
		return last.Summary, observation{outcome: pass, detail: "ack records"}
	}
	s, obs := summary()
	if s == nil {
		return obs
	}
	if s["processed"] != 5.0 || s["duplicates"] != 0.0 {
		e.t.Errorf("first consume: processed %v, duplicates %v; want 5 and 0", s["processed"], s["duplicates"])
	}
	if code, _, errs := e.jsctl("consumer", "reset", "WORK", "c", "--to-earliest", "--execute"); code != 0 {
		e.t.Fatalf("reset --to-earliest exited %d: %s", code, errs)
	}
	s, obs = summary()
	if s == nil {
		e.t.Errorf("second consume refused: %s", obs.detail)
		return observation{outcome: failed, detail: obs.detail}
	}
	if s["processed"] != 0.0 || s["duplicates"] != 5.0 {
		e.t.Errorf("consume after the rewind: processed %v, duplicates %v; want 0 and 5", s["processed"], s["duplicates"])
	}
	return obs
}
