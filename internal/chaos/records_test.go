package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// Ack records against a real nats-server process (one server):
//   - acks forget lowers the floor to the start of the range after the
//     range's records expired, so a replay runs the messages again;
//   - dead letters written after the ack bucket was deleted and made again
//     are stored (their IDs do not repeat the first bucket's), and the
//     records name their own.
func TestRecordsRealServer(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	ctx := testserver.Context(t, 2*time.Minute)
	for _, name := range []string{"z1", "d1", "d2"} {
		if _, err := e.js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun := func(want int, args ...string) string {
		t.Helper()
		code, out, errb := e.run(args...)
		if code != want {
			t.Fatalf("jsctl %v: exit %d, want %d\n%s%s", args, code, want, out, errb)
		}
		return out
	}

	// acks forget after the records expired.
	log := filepath.Join(t.TempDir(), "runs")
	handler := `echo "$JSCTL_SEQ" >> ` + log
	mustRun(0, "consume", "ORDERS", "z1", "--retention", "1s", "--max", "3", "--exec", handler)
	st, err := acks.OpenExisting(ctx, e.js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 30*time.Second, "the server to expire the records", func() bool {
		n, err := st.CountRange(ctx, "ORDERS.z1", 1, 3)
		return err == nil && n == 0
	})
	var forget struct {
		Selected    int    `json:"selected"`
		FloorBefore uint64 `json:"floor_before"`
		FloorAfter  uint64 `json:"floor_after"`
	}
	out := mustRun(0, "acks", "forget", "--scope", "ORDERS.z1", "--from-seq", "1", "--to-seq", "3", "--execute", "--json")
	if err := json.Unmarshal([]byte(out), &forget); err != nil || forget.Selected != 0 || forget.FloorBefore != 3 || forget.FloorAfter != 0 {
		t.Fatalf("forget: %+v %v\n%s", forget, err, out)
	}
	mustRun(0, "consumer", "reset", "ORDERS", "z1", "--to-seq", "1", "--execute")
	out = mustRun(0, "consume", "ORDERS", "z1", "--max", "3", "--exec", handler)
	if !strings.HasPrefix(out, "processed 3, duplicates skipped 0,") {
		t.Errorf("replay: %s", out)
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "1\n2\n3\n1\n2\n3\n" {
		t.Errorf("handler runs %q %v, want 1 to 3 twice", b, err)
	}

	// Dead letters across two incarnations of a bucket.
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d1", "d2"} {
		if name == "d2" {
			if err := e.js.DeleteKeyValue(ctx, "DLB"); err != nil {
				t.Fatal(err)
			}
		}
		mustRun(1, "consume", "ORDERS", name, "--bucket", "DLB", "--max", "3", "--max-failures", "1", "--dead-letter", "dead.orders", "--exec", "false")
		for _, seq := range []string{"1", "2", "3"} {
			var rec struct {
				DeadLetter struct {
					Stream  string `json:"stream"`
					Seq     uint64 `json:"seq"`
					Pending bool   `json:"pending"`
				} `json:"dead_letter"`
			}
			out := mustRun(0, "acks", "get", "ORDERS."+name, "--seq", seq, "--bucket", "DLB", "--json")
			if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.DeadLetter.Pending || rec.DeadLetter.Stream != "DEAD" {
				t.Fatalf("%s, message %s: %+v %v", name, seq, rec, err)
			}
			dead, err := e.js.Stream(ctx, "DEAD")
			if err != nil {
				t.Fatal(err)
			}
			m, err := dead.GetMsg(ctx, rec.DeadLetter.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if c, s := m.Header.Get(acks.DeadLetterConsumerHdr), m.Header.Get(acks.DeadLetterSeqHdr); c != name || s != seq {
				t.Errorf("%s, message %s: its record names dead letter %d, which is consumer %s's of message %s", name, seq, rec.DeadLetter.Seq, c, s)
			}
		}
	}
	dead, err := e.js.Stream(ctx, "DEAD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := dead.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 6 {
		t.Errorf("dead-letter stream holds %d messages, want 6", info.State.Msgs)
	}
}
