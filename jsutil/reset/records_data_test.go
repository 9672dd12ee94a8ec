package reset

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestToPreviousChecksIdentity: --to-previous undoes the last recorded
// change only on the consumer (and stream) it was recorded for. A consumer
// reset once, then deleted and added again (or its whole stream recreated)
// is refused with jsutil.Recreated naming both creation times, and
// nothing moves; a consumer missing on a recreated stream is not rebuilt.
// The control (the same consumer) undoes as before.
func TestToPreviousChecksIdentity(t *testing.T) {
	cases := []struct {
		name       string
		fault      func(t *testing.T, js jetstream.JetStream)
		refused    string // "" for the control
		stillThere bool   // the consumer exists when planned
	}{
		{"same consumer", func(*testing.T, jetstream.JetStream) {}, "", true},
		{"consumer recreated", func(t *testing.T, js jetstream.JetStream) {
			if err := js.DeleteConsumer(testCtx(t), "ORDERS", "c"); err != nil {
				t.Fatal(err)
			}
			addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
		}, `consumer "c" on "ORDERS" was deleted and created again since history revision 1 was recorded (created `, true},
		{"stream recreated", func(t *testing.T, js jetstream.JetStream) {
			recreateStream(t, js, 30)
			addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
		}, `stream "ORDERS" was deleted and created again since history revision 1 was recorded (created `, true},
		{"stream recreated, consumer missing", func(t *testing.T, js jetstream.JetStream) {
			recreateStream(t, js, 30)
		}, `stream "ORDERS" was deleted and created again since history revision 1 was recorded (created `, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 10, 0)
			addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
			fetch(t, js, "ORDERS", "c", 10)
			mustRun(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, Options{})
			tc.fault(t, js)
			var before *jetstream.ConsumerInfo
			if tc.stillThere {
				before = info(t, js, "ORDERS", "c")
			}
			p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToPrevious}, Options{})
			err := p.Err()
			if tc.refused == "" {
				if err != nil || p.Changes[0].To.Sequence != 11 {
					t.Fatalf("the undo of the same consumer: %v, to %d; want to 11", err, p.Changes[0].To.Sequence)
				}
				return
			}
			if !errors.Is(err, jsutil.ErrConflict) || !errors.Is(err, jsutil.ErrRecreated) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), " then, ") || !strings.Contains(err.Error(), " now)") {
				t.Fatalf("plan error %v; want Recreated with %q", err, tc.refused)
			}
			if err := Execute(testCtx(t), js, p, Options{}); !errors.Is(err, jsutil.ErrConflict) {
				t.Fatalf("execute: %v, want the refusal", err)
			}
			if !tc.stillThere {
				if _, err := js.Consumer(testCtx(t), "ORDERS", "c"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
					t.Fatalf("the refused undo rebuilt the consumer: %v", err)
				}
				return
			}
			after := info(t, js, "ORDERS", "c")
			if !after.Created.Equal(before.Created) || after.Delivered.Stream != before.Delivered.Stream || after.AckFloor.Stream != before.AckFloor.Stream {
				t.Fatalf("the refused undo changed the consumer: %+v -> %+v", before.Delivered, after.Delivered)
			}
		})
	}
}

// recreateStream deletes ORDERS and creates it again with n messages.
func recreateStream(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	if err := js.DeleteStream(testCtx(t), "ORDERS"); err != nil {
		t.Fatal(err)
	}
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", n, 0)
}

// TestRecoverComparesEveryMethod: a change killed right after its intent
// record was written, then the consumer edited by an operator. Recover
// compares the recorded configuration with the consumer's now for every
// method: the edited consumer is left as it is (state other), with the
// fields named, and its configuration is what the operator made it. The
// control (not edited) is finished.
func TestRecoverComparesEveryMethod(t *testing.T) {
	for _, method := range []Method{Reset, Recreate} {
		for _, edited := range []bool{false, true} {
			name := string(method)
			if edited {
				name += "/edited"
			}
			t.Run(name, func(t *testing.T) {
				js := single(t)
				addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
				publish(t, js, "orders.eu", 10, 0)
				addConsumer(t, js, "ORDERS", rich("billing"))
				fetch(t, js, "ORDERS", "billing", 8)
				opts := Options{Method: method, crash: func(s string) bool { return s == "intent" }}
				p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
				if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
					t.Fatalf("execute: %v", err)
				}
				cfg := rich("billing")
				if edited {
					cfg.Description, cfg.MaxAckPending, cfg.FilterSubjects = "edited by ops", 77, []string{"orders.eu"}
					if _, err := js.UpdateConsumer(testCtx(t), "ORDERS", cfg); err != nil {
						t.Fatal(err)
					}
				}
				want := configWithoutStart(t, js, "ORDERS", "billing")
				r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
				if err != nil || len(r.Changes) != 1 {
					t.Fatalf("recover plan %+v: %v", r, err)
				}
				rc := r.Changes[0]
				if !edited {
					if rc.State == StateOther {
						t.Fatalf("the control is left alone: %s", rc.Reason)
					}
					if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil || !rc.Done {
						t.Fatalf("recover of the control: %v (%+v)", err, rc)
					}
					return
				}
				for _, f := range []string{"description", "filter_subjects", "max_ack_pending"} {
					if !strings.Contains(rc.Reason, f) {
						t.Errorf("reason %q does not name %s", rc.Reason, f)
					}
				}
				if rc.State != StateOther || rc.Action != ActLeave || len(rc.ConfigDiff) != 0 {
					t.Fatalf("edited consumer: state %s, action %s, diff %v; want other, leave, nothing applied", rc.State, rc.Action, rc.ConfigDiff)
				}
				if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil || !rc.Done {
					t.Fatalf("recover: %v (%+v)", err, rc)
				}
				sameConfig(t, want, configWithoutStart(t, js, "ORDERS", "billing"))
				if u := intentsOf(t, js, "ORDERS", "billing"); len(u) != 0 {
					t.Fatalf("intent left: %+v", u)
				}
			})
		}
	}
}

// TestRecoverShowsWhatItApplies: the recover plan lists the configuration
// it applies, as a snapshot restore does: a consumer the change deleted
// is created with its recorded configuration, listed against the server's
// defaults with the fields that change where messages go or whether they
// are acknowledged warned about; a recreate lists its new configuration
// against the consumer's own (only the start differs).
func TestRecoverShowsWhatItApplies(t *testing.T) {
	for _, step := range []string{"deleted", "intent"} {
		t.Run(step, func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 10, 0)
			addConsumer(t, js, "ORDERS", rich("billing"))
			opts := Options{Method: Recreate, crash: func(s string) bool { return s == step }}
			p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v", err)
			}
			r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
			if err != nil || len(r.Changes) != 1 {
				t.Fatalf("recover plan %+v: %v", r, err)
			}
			rc := r.Changes[0]
			fields := map[string]string{}
			for _, f := range rc.ConfigDiff {
				fields[f.Field] = string(f.To)
			}
			warnings := strings.Join(rc.Warnings, "\n")
			switch step {
			case "deleted":
				if rc.Action != ActCreate || fields["filter_subjects"] != `["orders.eu","orders.us"]` || fields["max_deliver"] != "7" || fields["opt_start_seq"] != "3" ||
					!strings.Contains(warnings, "recorded configuration against the server's defaults: filter_subjects: unset -> [\"orders.eu\",\"orders.us\"]: changes which messages the consumer delivers") ||
					!strings.Contains(warnings, "max_deliver: -1 -> 7") {
					t.Fatalf("create: action %s, diff %v, warnings %q", rc.Action, fields, warnings)
				}
			case "intent":
				if rc.Action != ActRecreate || len(fields) != 2 || fields["deliver_policy"] != `"by_start_sequence"` || fields["opt_start_seq"] != "3" || warnings != "" {
					t.Fatalf("recreate: action %s, diff %v, warnings %q; want only the start", rc.Action, fields, warnings)
				}
			}
		})
	}
}

// TestRecordsAreData: records in jsctl's buckets are data. An intent
// record of the right shape, under the right key and with the right
// creation times, but holding hostile values, is reported by its key and
// skipped (recover, consumer ls and the reset plan), and nothing acts on
// it: the consumer keeps its configuration and position. History records
// holding impossible values are reported and skipped; --to-previous
// refuses while the latest is one. A plan file holding them is refused.
func TestRecordsAreData(t *testing.T) {
	intents := []struct {
		name    string
		mutate  func(in map[string]any)
		problem string
	}{
		{"hostile configuration to create", func(in map[string]any) {
			nc := in["new_config"].(map[string]any)
			nc["ack_policy"], nc["filter_subject"], nc["max_deliver"] = "none", "ed.zzz", 1
			delete(nc, "filter_subjects")
		}, "configuration to create differs from the consumer's recorded one in more than its start (ack_policy, filter_subject, filter_subjects, max_deliver)"},
		{"deliver subject of the server's API", func(in map[string]any) {
			for _, k := range []string{"config", "new_config"} {
				in[k].(map[string]any)["deliver_subject"] = "$JS.API.STREAM.DELETE.VICTIM"
			}
		}, `deliver subject "$JS.API.STREAM.DELETE.VICTIM" is a subject of the server's own API`},
		{"interest holder not its own", func(in map[string]any) { in["hold"] = "audit" }, `naming consumer "audit" as its interest holder`},
		{"ack records of another scope", func(in map[string]any) {
			in["forget_acks"] = map[string]any{"bucket": "JSCTL_ACKS", "scope": "OTHER.x", "from_seq": 3, "to_seq": 8}
		}, `ack records to forget are of scope "OTHER.x"`},
		{"started in the future", func(in map[string]any) { in["time"] = "2100-01-01T00:00:00Z" }, "its start time 2100-01-01T00:00:00Z lies in the future"},
		{"target past the stream's end", func(in map[string]any) { in["to"] = map[string]any{"sequence": uint64(math.MaxUint64)} }, "past the end of stream \"ORDERS\""},
		{"configuration of another consumer", func(in map[string]any) {
			in["config"].(map[string]any)["durable_name"] = "audit"
		}, `its configuration names consumer "audit"`},
	}
	for _, tc := range intents {
		t.Run("intent/"+tc.name, func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 10, 0)
			addConsumer(t, js, "ORDERS", rich("billing"))
			fetch(t, js, "ORDERS", "billing", 8)
			opts := Options{Method: Recreate, crash: func(s string) bool { return s == "intent" }}
			p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v", err)
			}
			before := configWithoutStart(t, js, "ORDERS", "billing")
			kv, err := js.KeyValue(testCtx(t), IntentBucket)
			if err != nil {
				t.Fatal(err)
			}
			key := HistoryKey("ORDERS", "billing")
			e, err := kv.Get(testCtx(t), key)
			if err != nil {
				t.Fatal(err)
			}
			var in map[string]any
			if err := json.Unmarshal(e.Value(), &in); err != nil {
				t.Fatal(err)
			}
			tc.mutate(in)
			b, _ := json.Marshal(in)
			if _, err := kv.Put(testCtx(t), key, b); err != nil {
				t.Fatal(err)
			}
			r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Changes) != 0 || len(r.SkippedRecords) != 1 || r.SkippedRecords[0].Key != key || !strings.Contains(r.SkippedRecords[0].Problem, tc.problem) {
				t.Fatalf("recover plan: %d changes, skipped %+v; want the record skipped with %q", len(r.Changes), r.SkippedRecords, tc.problem)
			}
			if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
				t.Fatal(err)
			}
			if u := intentsOf(t, js, "ORDERS", "billing"); len(u) != 0 {
				t.Fatalf("consumer ls would list the record as a change: %+v", u)
			}
			plan := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, Options{})
			if len(plan.SkippedRecords) != 1 {
				t.Fatalf("the reset plan does not report the record: %+v", plan.SkippedRecords)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "billing"))
			if i := info(t, js, "ORDERS", "billing"); i.Delivered.Stream != 8 {
				t.Fatalf("the consumer moved: delivered %d", i.Delivered.Stream)
			}
		})
	}

	history := []struct {
		name    string
		mutate  func(r map[string]any)
		problem string
	}{
		{"time in the future", func(r map[string]any) { r["time"] = "2100-01-01T00:00:00Z" }, "its time 2100-01-01T00:00:00Z lies in the future"},
		{"hostile configuration", func(r map[string]any) {
			r["config"].(map[string]any)["deliver_subject"] = "$KV.JSCTL_ACKS.x"
		}, "is a subject of the server's own API"},
		{"a position past the largest sequence", func(r map[string]any) {
			r["from"] = map[string]any{"delivered": uint64(math.MaxUint64), "ack_floor": uint64(math.MaxUint64)}
		}, "a position past the largest sequence"},
		{"an unknown method", func(r map[string]any) { r["method"] = "nuke" }, `unknown method "nuke"`},
	}
	for _, tc := range history {
		t.Run("history/"+tc.name, func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 10, 0)
			addConsumer(t, js, "ORDERS", rich("billing"))
			fetch(t, js, "ORDERS", "billing", 8)
			mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, Options{})
			kv, err := js.KeyValue(testCtx(t), HistoryBucket)
			if err != nil {
				t.Fatal(err)
			}
			key := HistoryKey("ORDERS", "billing")
			e, err := kv.Get(testCtx(t), key)
			if err != nil {
				t.Fatal(err)
			}
			var r map[string]any
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				t.Fatal(err)
			}
			tc.mutate(r)
			b, _ := json.Marshal(r)
			rev, err := kv.Put(testCtx(t), key, b)
			if err != nil {
				t.Fatal(err)
			}
			recs, bad, err := HistoryChecked(testCtx(t), js, "", "ORDERS", "billing")
			if err != nil || len(recs) != 1 || len(bad) != 1 || bad[0].Revision != rev || !strings.Contains(bad[0].Problem, tc.problem) {
				t.Fatalf("history: %d records, bad %+v (%v); want 1 and the forged one reported with %q", len(recs), bad, err, tc.problem)
			}
			// The latest record is the forged one: undoing the one before
			// it would undo the wrong change.
			_, err = NewPlan(testCtx(t), js, "ORDERS", []string{"billing"}, false, Target{Kind: ToPrevious}, Options{})
			if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("--to-previous: %v; want the latest record named", err)
			}
		})
	}

	plans := []struct {
		name   string
		mutate func(p map[string]any)
		want   string
	}{
		{"consumer name no server holds", func(p map[string]any) { change(p)["consumer"] = "bill.ing" }, `consumer name "bill.ing" is not a name a server can hold`},
		{"stream created in the future", func(p map[string]any) { p["stream_created"] = "2100-01-01T00:00:00Z" }, "lies in the future"},
		{"hostile configuration to create", func(p map[string]any) {
			c := change(p)
			c["method"], c["config"] = "create", map[string]any{"durable_name": "billing", "deliver_subject": "$SYS.REQ.SERVER.PING"}
		}, "is a subject of the server's own API"},
		{"start to restore of no policy", func(p map[string]any) {
			change(p)["restore_start"] = map[string]any{"deliver_policy": "everything"}
		}, `unknown deliver policy "everything"`},
	}
	for _, tc := range plans {
		t.Run("plan/"+tc.name, func(t *testing.T) {
			good := &Plan{Stream: "ORDERS", Target: Target{Kind: ToSeq, Seq: 3}, Changes: []*Change{{Stream: "ORDERS", Consumer: "billing", Method: Reset, To: To{Sequence: 3}}}}
			b, _ := json.Marshal(good)
			if _, err := ReadPlan(b); err != nil {
				t.Fatalf("the control plan: %v", err)
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			tc.mutate(m)
			b, _ = json.Marshal(m)
			_, err := ReadPlan(b)
			if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read plan: %v; want bad input with %q", err, tc.want)
			}
		})
	}
}

func change(p map[string]any) map[string]any { return p["changes"].([]any)[0].(map[string]any) }

// TestToPreviousRefusesBadLatest: --to-previous refuses (bad input) while
// the latest history record cannot be used, naming it; the history still
// lists the others.
func TestToPreviousRefusesBadLatest(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", rich("billing"))
	mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, Options{})
	kv, err := js.KeyValue(testCtx(t), HistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(testCtx(t), HistoryKey("ORDERS", "billing"), []byte(`{"stream":"ORDERS","consumer":"billing","method":"reset","to":{"sequence":5},"time":"2200-01-01T00:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(testCtx(t), js, "ORDERS", []string{"billing"}, false, Target{Kind: ToPrevious}, Options{})
	if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), "lies in the future") {
		t.Fatalf("plan: %v", err)
	}
	recs, bad, err := HistoryChecked(testCtx(t), js, "", "ORDERS", "billing")
	if err != nil || len(recs) != 1 || len(bad) != 1 {
		t.Fatalf("history %d, bad %+v: %v", len(recs), bad, err)
	}
}

// TestFromFileChecksSource: a saved --to-consumer plan is refused when the
// consumer its target was copied from was deleted and created again since
// (jsutil.Recreated, both creation times).
func TestFromFileChecksSource(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "src"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	fetch(t, js, "ORDERS", "src", 6)
	p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToConsumer, Consumer: "src"}, Options{})
	if p.Changes[0].Source == nil || p.Changes[0].Source.Created == nil {
		t.Fatalf("the plan does not record the source's creation time: %+v", p.Changes[0].Source)
	}
	b, _ := json.Marshal(p)
	saved, err := ReadPlan(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Replan(testCtx(t), js, saved, Options{})
	if err != nil || again.Err() != nil {
		t.Fatalf("the control: %v %v", err, again.Err())
	}
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "src"); err != nil {
		t.Fatal(err)
	}
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "src"})
	again, err = Replan(testCtx(t), js, saved, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = again.Err()
	if !errors.Is(err, jsutil.ErrRecreated) || !strings.Contains(err.Error(), `consumer "src" on "ORDERS" was deleted and created again since the plan was made (created `) {
		t.Fatalf("replan: %v", err)
	}
}
