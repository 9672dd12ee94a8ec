package reset

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestShowMessages checks Options.ShowMessages against a brute-force
// list: every stored message read one by one, kept when the consumer's
// filters match and its sequence is in the redelivered (or skipped) range,
// then the first (N+1)/2 and the last N/2 of them.
func TestShowMessages(t *testing.T) {
	js := single(t)
	ctx := testCtx(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	rng := rand.New(rand.NewPCG(18, 1))
	subjects := []string{"orders.eu", "orders.us", "orders.asia"}
	for i := 0; i < 60; i++ {
		subj := subjects[rng.IntN(len(subjects))]
		data := strings.Repeat("x", 1+rng.IntN(30))
		if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: subj, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{5, 6, 30, 44} { // interior deletes
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	var stored []Message
	for seq := uint64(1); seq <= 60; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		stored = append(stored, Message{Seq: seq, Time: m.Time.UTC(), Subject: m.Subject, Size: len(m.Data)})
	}
	consumers := map[string][]string{"all": nil, "eu": {"orders.eu"}, "multi": {"orders.eu", "orders.asia"}, "fresh": {"orders.us"}, "pending": nil}
	for name, f := range consumers {
		addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: name, FilterSubjects: f})
	}
	for _, name := range []string{"all", "eu", "multi"} {
		fetch(t, js, "ORDERS", name, 60)
	}
	fetch(t, js, "ORDERS", "pending", 20)
	fetchNoAck(t, js, "ORDERS", "pending", 15)

	matches := func(filters []string, subj string) bool {
		if len(filters) == 0 {
			return true
		}
		for _, f := range filters {
			if f == subj {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"all", "eu", "multi", "fresh", "pending"} {
		for _, to := range []uint64{1, 7, 25, 45, 61} {
			for _, n := range []int{1, 4, 7, 100} {
				t.Run(fmt.Sprintf("%s/to%d/n%d", name, to, n), func(t *testing.T) {
					pl := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: to}, Options{ShowMessages: n, Force: true})
					c := pl.Changes[0]
					var lo, hi uint64
					kind := ""
					switch {
					case c.To.Sequence <= c.From.Delivered && cnt(c.Redeliver) > 0:
						lo, hi, kind = c.To.Sequence, c.From.Delivered, MessagesRedeliver
					case cnt(c.Skip) > 0:
						lo, hi, kind = c.From.AckFloor+1, c.To.Sequence-1, MessagesSkip
					}
					var want []Message
					if kind != "" {
						for _, m := range stored {
							if m.Seq >= lo && m.Seq <= hi && matches(consumers[name], m.Subject) {
								want = append(want, m)
							}
						}
					}
					total := uint64(len(want))
					if len(want) > n {
						want = append(want[:(n+1)/2:(n+1)/2], want[len(want)-n/2:]...)
					}
					if c.MessagesTotal == nil || *c.MessagesTotal != total || c.MessagesKind != kind {
						t.Fatalf("total %v kind %q, want %d %q (redeliver %d skip %d)", c.MessagesTotal, c.MessagesKind, total, kind, cnt(c.Redeliver), cnt(c.Skip))
					}
					if kind == MessagesRedeliver && int64(total) != cnt(c.Redeliver) || kind == MessagesSkip && int64(total) != cnt(c.Skip) {
						t.Fatalf("total %d disagrees with redeliver %d / skip %d", total, cnt(c.Redeliver), cnt(c.Skip))
					}
					if len(c.Messages) != len(want) {
						t.Fatalf("listed %d messages, want %d: %+v", len(c.Messages), len(want), c.Messages)
					}
					for i := range want {
						if g, w := c.Messages[i], want[i]; g.Seq != w.Seq || g.Subject != w.Subject || g.Size != w.Size || !g.Time.Equal(w.Time) {
							t.Fatalf("message %d is %+v, want %+v", i, g, w)
						}
					}
				})
			}
		}
	}

	// JSON: each change carries messages and messages_total; without
	// ShowMessages neither appears.
	pl := mustPlan(t, js, "ORDERS", []string{"all"}, Target{Kind: ToSeq, Seq: 58}, Options{ShowMessages: 2})
	b, _ := json.Marshal(pl.Changes[0])
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	if msgs, ok := doc["messages"].([]any); !ok || len(msgs) != 2 || doc["messages_total"] != float64(3) {
		t.Fatalf("JSON change: messages %v, messages_total %v", doc["messages"], doc["messages_total"])
	}
	first := doc["messages"].([]any)[0].(map[string]any)
	for _, k := range []string{"seq", "time", "subject", "size"} {
		if _, ok := first[k]; !ok {
			t.Fatalf("a listed message lacks %q: %v", k, first)
		}
	}
	pl = mustPlan(t, js, "ORDERS", []string{"all"}, Target{Kind: ToSeq, Seq: 58}, Options{})
	b, _ = json.Marshal(pl.Changes[0])
	if strings.Contains(string(b), `"messages`) {
		t.Fatalf("without ShowMessages the change has messages: %s", b)
	}
}
