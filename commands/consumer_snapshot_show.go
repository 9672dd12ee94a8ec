package commands

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotShowCmd shows a snapshot against where its consumers are
// now.
type ConsumerSnapshotShowCmd struct {
	Name string `arg:"" predictor:"snapshot" help:"Snapshot to show."`
}

// Help is the long help of consumer snapshot show.
func (ConsumerSnapshotShowCmd) Help() string {
	return `Shows a snapshot and, for each of its consumers, where it is now against it: its
ack floor then and now, how many messages (within its filter) and how much message
time it moved since (negative when it moved back), and which configuration fields
changed, with both values. A consumer deleted since is shown as deleted.

--json prints {"snapshot": the saved document, "consumers": [{"stream","consumer",
"deleted","saved","now","moved_messages","moved_sequences","moved_ns",
"config_changes":[{"field","saved","now"}],"warnings"}]}.

Examples:
  jsctl consumer snapshot show pre-deploy
  jsctl consumer snapshot show pre-deploy --json`
}

// Run shows the snapshot.
func (c *ConsumerSnapshotShowCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	opts := positionsOptions(env, "")
	snap, err := positions.Get(ctx, cl.JS, c.Name, opts)
	if err != nil {
		return err
	}
	cmps, err := positions.Compare(ctx, cl.JS, snap, opts)
	if err != nil {
		return err
	}
	if p.JSON {
		return p.PrintJSON(struct {
			Snapshot  *positions.Snapshot    `json:"snapshot"`
			Consumers []positions.Comparison `json:"consumers"`
		}{snap, cmps})
	}
	p.Printf("Snapshot %s, taken %s by %s", Escape(snap.Name), p.Time(snap.Created), snapshotWho(snap))
	if snap.Description != "" {
		p.Printf(": %s", Preview([]byte(snap.Description), 200))
	}
	p.Printf("\n")
	for _, st := range snap.Streams {
		p.Printf("Stream %s then: first %d at %s, last %d at %s\n", Escape(st.Name), st.FirstSeq, optTime(p, st.FirstTime), st.LastSeq, optTime(p, st.LastTime))
	}
	multi := len(snap.Streams) > 1
	headers := []string{"CONSUMER", "SAVED ACK FLOOR", "NOW", "MOVED", "MOVED TIME", "CONFIG"}
	if multi {
		headers = append([]string{"STREAM"}, headers...)
	}
	var rows [][]string
	for _, m := range cmps {
		row := []string{m.Consumer, u64(m.Saved.StreamSeq), "deleted", "-", "-", "-"}
		if !m.Deleted {
			cfg := "same"
			if n := len(m.ConfigChanges); n == 1 {
				cfg = "1 change"
			} else if n > 1 {
				cfg = itoa(n) + " changes"
			}
			row = []string{m.Consumer, u64(m.Saved.StreamSeq), u64(m.Now.StreamSeq), signed(m.MovedMessages), signedDuration(m.MovedNS), cfg}
		}
		if multi {
			row = append([]string{m.Stream}, row...)
		}
		rows = append(rows, row)
	}
	if err := p.Table(headers, rows); err != nil {
		return err
	}
	for _, m := range cmps {
		who := Escape(m.Consumer)
		if multi {
			who = Escape(m.Stream + "/" + m.Consumer)
		}
		for _, ch := range m.ConfigChanges {
			p.Printf("  %s: %s: %s -> %s\n", who, Escape(ch.Field), configValueText(ch.Field, ch.Saved), configValueText(ch.Field, ch.Now))
		}
		for _, w := range m.Warnings {
			p.Printf("  %s: warning: %s\n", who, Escape(strings.TrimSpace(w)))
		}
	}
	return nil
}

// durationFields are the consumer configuration fields the server gives
// in nanoseconds.
var durationFields = map[string]bool{"ack_wait": true, "backoff": true, "idle_heartbeat": true, "inactive_threshold": true, "max_expires": true}

// configValueText shows a configuration value for people: durations as
// durations ("30s", "[1s 5s]"), anything else as its JSON.
func configValueText(field string, raw json.RawMessage) string {
	if durationFields[field] {
		var ns int64
		if json.Unmarshal(raw, &ns) == nil {
			return time.Duration(ns).String()
		}
		var list []int64
		if json.Unmarshal(raw, &list) == nil && list != nil {
			out := make([]string, len(list))
			for i, n := range list {
				out[i] = time.Duration(n).String()
			}
			return "[" + strings.Join(out, " ") + "]"
		}
	}
	return Preview(raw, 80)
}
