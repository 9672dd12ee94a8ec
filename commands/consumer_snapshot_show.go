package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
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
changed, with both values. A consumer deleted since is shown as deleted, with its
saved configuration against the server's defaults (a restore creates it from that
configuration); fields that change where messages go or whether they are
acknowledged (deliver_subject, deliver_group, ack_policy, filter subjects,
max_deliver) are warnings. A stream deleted and created again since the snapshot
is a warning too: a restore refuses it unless --by-time.

--json prints {"snapshot": the saved document, "consumers": [{"stream","consumer",
"deleted","saved","now","moved_messages","moved_sequences","moved_ns",
"config_changes":[{"field","saved","now"}],"config_diff":[{"field","from","to",
"warning"}],"warnings"}]}; config_diff is the saved configuration ("to") against
the consumer now, or the server's defaults for a deleted one ("from").

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
	warnNamedAs(env, []*positions.Snapshot{snap})
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
	head := fmt.Sprintf("Snapshot %s, taken %s by %s", Escape(snap.Name), p.Time(snap.Created), snapshotWho(snap))
	if snap.Description != "" {
		head += ": " + Preview([]byte(snap.Description), 200)
	}
	p.Fitf("%s\n", head)
	for _, st := range snap.Streams {
		p.Fitf("Stream %s then: first %d at %s, last %d at %s\n", Escape(st.Name), st.FirstSeq, optTime(p, st.FirstTime), st.LastSeq, optTime(p, st.LastTime))
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
			p.Fitf("  %s: %s: %s -> %s\n", who, Escape(ch.Field), configValueText(ch.Field, ch.Saved), configValueText(ch.Field, ch.Now))
		}
		if m.Deleted {
			printConfigDiff(p, who, "saved configuration against the server's defaults", m.ConfigDiff)
		}
		for _, w := range m.Warnings {
			p.Fitf("  %s: warning: %s\n", who, Escape(strings.TrimSpace(w)))
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

// printConfigDiff prints a saved configuration's difference (what it is
// against), one field a line; called-out fields are marked.
func printConfigDiff(p *Printer, who, what string, diff []reset.ConfigField) {
	if len(diff) == 0 {
		return
	}
	p.Fitf("  %s: %s:\n", who, what)
	for _, f := range diff {
		mark := ""
		if f.Warning != "" {
			mark = "  (!)"
		}
		p.Fitf("    %s: %s -> %s%s\n", Escape(f.Field), diffValueText(f.Field, f.From), diffValueText(f.Field, f.To), mark)
	}
}

// diffValueText is configValueText, with an absent value as "unset".
func diffValueText(field string, raw json.RawMessage) string {
	if string(raw) == "null" {
		return "unset"
	}
	return configValueText(field, raw)
}
