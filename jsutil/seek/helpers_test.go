package seek

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testCtx(t testing.TB) context.Context { return testserver.Context(t, 2*time.Minute) }

// startJS starts a server and returns a JetStream handle on it.
func startJS(t testing.TB) jetstream.JetStream { return testserver.JetStream(t) }

func mustStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	return testserver.AddStream(t, js, cfg)
}

func mustPub(t testing.TB, js jetstream.JetStream, subject, data string) uint64 {
	t.Helper()
	ack, err := testserver.Publish(testCtx(t), js, &nats.Msg{Subject: subject, Data: []byte(data)})
	if err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	return ack.Sequence
}

// readAll reads every message of the stream, one exact get per sequence,
// without using this package (it is the reference for the tests).
func readAll(t testing.TB, s jetstream.Stream) (msgs []Message, first, last uint64) {
	t.Helper()
	ctx := testCtx(t)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, last = info.State.FirstSeq, info.State.LastSeq
	for seq := max(first, 1); seq <= last; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		msgs = append(msgs, Message{Sequence: m.Sequence, Time: m.Time, Subject: m.Subject, Size: len(m.Data), Data: m.Data})
	}
	return msgs, first, last
}

// subjectMatches reports whether subject matches filter ("" matches all).
func subjectMatches(filter, subject string) bool {
	if filter == "" || filter == ">" {
		return true
	}
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// expect computes the answer of a seek by looking at every message.
func expect(msgs []Message, first, last uint64, target time.Time, mode Mode, filter string) (*Message, uint64) {
	var after, atOrBefore, strictlyBefore *Message
	for i := range msgs {
		m := &msgs[i]
		if !subjectMatches(filter, m.Subject) {
			continue
		}
		if after == nil && !m.Time.Before(target) {
			after = m
		}
		if !m.Time.After(target) {
			atOrBefore = m
		}
		if m.Time.Before(target) {
			strictlyBefore = m
		}
	}
	var got *Message
	switch mode {
	case After:
		got = after
	case Before:
		got = atOrBefore
	case Nearest:
		switch {
		case strictlyBefore == nil:
			got = after
		case after == nil:
			got = strictlyBefore
		case after.Time.Sub(target) <= target.Sub(strictlyBefore.Time):
			got = after
		default:
			got = strictlyBefore
		}
	}
	switch {
	case got != nil:
		return got, got.Sequence
	case mode == Before:
		return nil, max(first, 1)
	}
	return nil, last + 1
}

// oldServer imitates a server that predates start_time: a lenient one
// ignores the field, a strict one rejects it.
type oldServer struct {
	getter
	strict bool
}

func (o oldServer) get(ctx context.Context, req getRequest) (*Message, error) {
	if req.StartTime != nil {
		if o.strict {
			return nil, fmt.Errorf("%w: json: unknown field \"start_time\"", errUnknownField)
		}
		req.StartTime = nil
	}
	return o.getter.get(ctx, req)
}

// countingGetter counts requests.
type countingGetter struct {
	getter
	gets, infos int
}

func (c *countingGetter) get(ctx context.Context, req getRequest) (*Message, error) {
	c.gets++
	return c.getter.get(ctx, req)
}

func (c *countingGetter) info(ctx context.Context) (streamState, error) {
	c.infos++
	return c.getter.info(ctx)
}

func apiGetterFor(t testing.TB, js jetstream.JetStream, stream string) *apiGetter {
	t.Helper()
	g, err := newAPIGetter(js, stream)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func msgString(m *Message) string {
	if m == nil {
		return "<nil>"
	}
	return fmt.Sprintf("#%d %s %s", m.Sequence, m.Subject, m.Time.UTC().Format(time.RFC3339Nano))
}

// publishBatch publishes an atomic batch, one message per subject, and
// waits for its commit. In a cluster the stream leader stores every
// message of the batch with one timestamp.
func publishBatch(t testing.TB, js jetstream.JetStream, subjects ...string) {
	t.Helper()
	nc := js.Conn()
	id := fmt.Sprintf("b%d", time.Now().UnixNano())
	for i, subject := range subjects {
		m := nats.NewMsg(subject)
		m.Data = []byte(fmt.Sprintf("batch-%d", i+1))
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", fmt.Sprint(i+1))
		if i < len(subjects)-1 {
			if err := nc.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		r, err := nc.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatalf("commit batch: %v", err)
		}
		var ack struct {
			Count int                 `json:"count"`
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(r.Data, &ack); err != nil || ack.Error != nil || ack.Count != len(subjects) {
			t.Fatalf("commit batch: %s (%v)", r.Data, err)
		}
	}
}
