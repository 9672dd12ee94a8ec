package commands_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdConsumerAdd creates a durable consumer:
//
//	consumer-add STREAM NAME [--pull|--push DELIVER_SUBJ]
//	             [--deliver all|new|last|last-per-subject|by-seq=N|by-time=T]
//	             [--filter S]... [--ack-wait D] [--max-deliver N] [--max-ack-pending N]
//	             [--description TEXT] [--metadata K=V]... [--backoff D,D...] [--replicas N]
//	             [--memory] [--headers-only] [--ack all|explicit|none]
//
// T in by-time= is RFC 3339. --push makes a push consumer with that
// deliver subject (--pull, the default, a pull consumer).
func cmdConsumerAdd(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "push", "deliver", "filter", "ack-wait", "max-deliver", "max-ack-pending",
		"description", "metadata", "backoff", "replicas", "ack")
	if len(pos) != 2 {
		ts.Fatalf("usage: consumer-add STREAM NAME [--pull|--push DELIVER_SUBJ] [--deliver POLICY] [--filter S]... [--ack-wait D] ...")
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       pos[1],
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       optDur(ts, opts, "ack-wait"),
		MaxDeliver:    optInt(ts, opts, "max-deliver", 0),
		MaxAckPending: optInt(ts, opts, "max-ack-pending", 0),
		Description:   optStr(opts, "description", ""),
		Replicas:      optInt(ts, opts, "replicas", 0),
	}
	_, cfg.MemoryStorage = opts["memory"]
	_, cfg.HeadersOnly = opts["headers-only"]
	cfg.DeliverSubject = optStr(opts, "push", "")
	switch a := optStr(opts, "ack", "explicit"); a {
	case "explicit":
	case "all":
		cfg.AckPolicy = jetstream.AckAllPolicy
	case "none":
		cfg.AckPolicy = jetstream.AckNonePolicy
	default:
		ts.Fatalf("consumer-add: unknown ack policy %q", a)
	}
	if f := opts["filter"]; len(f) == 1 {
		cfg.FilterSubject = f[0]
	} else if len(f) > 1 {
		cfg.FilterSubjects = f
	}
	for _, kv := range opts["metadata"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("consumer-add: --metadata wants K=V, got %q", kv)
		}
		if cfg.Metadata == nil {
			cfg.Metadata = map[string]string{}
		}
		cfg.Metadata[k] = v
	}
	if b := optStr(opts, "backoff", ""); b != "" {
		for _, s := range strings.Split(b, ",") {
			d, err := time.ParseDuration(s)
			ts.Check(err)
			cfg.BackOff = append(cfg.BackOff, d)
		}
	}
	switch d := optStr(opts, "deliver", "all"); {
	case d == "all":
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	case d == "new":
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	case d == "last":
		cfg.DeliverPolicy = jetstream.DeliverLastPolicy
	case d == "last-per-subject":
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	case strings.HasPrefix(d, "by-seq="):
		n, err := strconv.ParseUint(strings.TrimPrefix(d, "by-seq="), 10, 64)
		ts.Check(err)
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, n
	case strings.HasPrefix(d, "by-time="):
		t, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(d, "by-time="))
		ts.Check(err)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		ts.Fatalf("consumer-add: unknown deliver policy %q", d)
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	var err error
	if cfg.DeliverSubject != "" {
		_, err = js.CreatePushConsumer(ctx, pos[0], cfg)
	} else {
		_, err = js.CreateConsumer(ctx, pos[0], cfg)
	}
	if neg {
		if err == nil {
			ts.Fatalf("consumer-add %s succeeded unexpectedly", pos[1])
		}
		return
	}
	ts.Check(err)
}

// cmdConsumerFetch takes up to N of the messages a pull consumer has for a
// client, as a plain JetStream client would, acknowledging each, and sets
// $FETCHED to their stream sequences (space separated). It waits for the
// first message (at most 5s, as a delivery can take a moment on a loaded
// machine; 0.5s with --want none), then takes what is there without
// waiting. With --want it fails unless they are exactly SEQS (comma
// separated; "none" for no messages):
//
//	consumer-fetch STREAM NAME N [--want SEQS] [--no-ack]
func cmdConsumerFetch(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "want")
	if neg || len(pos) != 3 {
		ts.Fatalf("usage: consumer-fetch STREAM NAME N [--want SEQS] [--no-ack]")
	}
	n, err := strconv.Atoi(pos[2])
	ts.Check(err)
	want, wanted := "", false
	if w, ok := opts["want"]; ok {
		want, wanted = strings.ReplaceAll(w[0], ",", " "), true
		if want == "none" {
			want = ""
		}
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	cons, err := js.Consumer(ctx, pos[0], pos[1])
	ts.Check(err)
	wait := 5 * time.Second
	if wanted && want == "" {
		wait = 500 * time.Millisecond
	}
	var got []string
	_, noAck := opts["no-ack"]
	err = testserver.Take(cons, n, wait, func(m jetstream.Msg) error {
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		got = append(got, strconv.FormatUint(md.Sequence.Stream, 10))
		if noAck {
			return nil
		}
		return m.DoubleAck(ctx)
	})
	if err != nil {
		ts.Fatalf("consumer-fetch %s: %v", pos[1], err)
	}
	ts.Setenv("FETCHED", strings.Join(got, " "))
	if wanted {
		w := want
		if strings.Join(got, " ") != w {
			ts.Fatalf("consumer-fetch %s: got sequences [%s], want [%s]", pos[1], strings.Join(got, " "), w)
		}
	}
}

// cmdConsumerWait leaves a pull request waiting on a consumer (as a client
// blocked in Fetch would) until the script ends, and returns once the
// server counts it:
//
//	consumer-wait STREAM NAME
func cmdConsumerWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: consumer-wait STREAM NAME")
	}
	nc, _ := scriptJS(ts)
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	ts.Check(err)
	ts.Defer(func() { _ = sub.Unsubscribe() })
	req := fmt.Sprintf(`{"batch":1,"expires":%d}`, (60 * time.Second).Nanoseconds())
	ts.Check(nc.PublishRequest(fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", args[0], args[1]), inbox, []byte(req)))
	waitConsumer(ts, args[0], args[1], func(ci *jetstream.ConsumerInfo) bool { return ci.NumWaiting > 0 })
	ts.Value(waitKey{}).(map[string]*nats.Subscription)[args[0]+"/"+args[1]] = sub
}

type waitKey struct{}

// cmdConsumerWaited reads the message that the pull request left waiting by
// consumer-wait received, as the client blocked in Fetch would, and fails
// unless it came within 5 seconds with stream sequence SEQ, or, with
// --status, as a status message with code CODE (409: the request ended):
//
//	consumer-waited STREAM NAME --want SEQ|--status CODE
func cmdConsumerWaited(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "want", "status")
	if neg || len(pos) != 2 || (opts["want"] == nil) == (opts["status"] == nil) {
		ts.Fatalf("usage: consumer-waited STREAM NAME --want SEQ|--status CODE")
	}
	sub := ts.Value(waitKey{}).(map[string]*nats.Subscription)[pos[0]+"/"+pos[1]]
	if sub == nil {
		ts.Fatalf("consumer-waited: no consumer-wait %s %s before", pos[0], pos[1])
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		ts.Fatalf("consumer-waited %s: no message within 5s: %v", pos[1], err)
	}
	if st := opts["status"]; st != nil {
		if got := m.Header.Get("Status"); got != st[0] || len(m.Data) != 0 {
			ts.Fatalf("consumer-waited %s: got status %q %q (%q), want status %s", pos[1], got, m.Header.Get("Description"), m.Data, st[0])
		}
		ts.Logf("consumer-waited %s: status %s %s", pos[1], m.Header.Get("Status"), m.Header.Get("Description"))
		return
	}
	md, err := m.Metadata()
	if err != nil {
		ts.Fatalf("consumer-waited %s: not a message (%v): %q %q", pos[1], err, m.Header, m.Data)
	}
	if got := strconv.FormatUint(md.Sequence.Stream, 10); got != opts["want"][0] {
		ts.Fatalf("consumer-waited %s: got sequence %s, want %s", pos[1], got, opts["want"][0])
	}
}

// cmdConsumerBind subscribes to a push consumer's deliver subject until the
// script ends, and returns once the server sees the consumer bound:
//
//	consumer-bind STREAM NAME
func cmdConsumerBind(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: consumer-bind STREAM NAME")
	}
	nc, _ := scriptJS(ts)
	sub, err := nc.SubscribeSync(consumerInfo(ts, args[0], args[1]).Config.DeliverSubject)
	ts.Check(err)
	ts.Defer(func() { _ = sub.Unsubscribe() })
	waitConsumer(ts, args[0], args[1], func(ci *jetstream.ConsumerInfo) bool { return ci.PushBound })
}

// waitConsumer polls a consumer's info until ok, for at most
// testserver.MinWait (a bound for a stuck test, not a timing).
func waitConsumer(ts *testscript.TestScript, stream, name string, ok func(*jetstream.ConsumerInfo) bool) {
	deadline := time.Now().Add(testserver.MinWait)
	for {
		if ok(consumerInfo(ts, stream, name)) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("consumer %s: condition not reached within %s", name, testserver.MinWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consumerInfo reads a consumer's info (pull or push) with a plain request.
func consumerInfo(ts *testscript.TestScript, stream, name string) *jetstream.ConsumerInfo {
	nc, _ := scriptJS(ts)
	msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", stream, name), nil, 5*time.Second)
	ts.Check(err)
	var ci jetstream.ConsumerInfo
	ts.Check(json.Unmarshal(msg.Data, &ci))
	return &ci
}

// cmdConsumerConfig writes a consumer's configuration, as the server
// reports it, without its start position (deliver_policy, opt_start_seq,
// opt_start_time) and the metadata the server adds, as indented JSON to
// FILE, so a script can compare it before and after a recreate:
//
//	consumer-config STREAM NAME FILE
func cmdConsumerConfig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: consumer-config STREAM NAME FILE")
	}
	nc, _ := scriptJS(ts)
	msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", args[0], args[1]), nil, 5*time.Second)
	ts.Check(err)
	var info struct {
		Config map[string]any `json:"config"`
	}
	ts.Check(json.Unmarshal(msg.Data, &info))
	if info.Config == nil {
		ts.Fatalf("consumer-config: no config in %s", msg.Data)
	}
	for _, k := range []string{"deliver_policy", "opt_start_seq", "opt_start_time"} {
		delete(info.Config, k)
	}
	if md, ok := info.Config["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "_nats.") {
				delete(md, k)
			}
		}
		if len(md) == 0 {
			delete(info.Config, "metadata")
		}
	}
	b, err := json.MarshalIndent(info.Config, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), append(b, '\n'), 0o644))
}
