package reset

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// Records are data (jsutil/recorded.go): every field of an intent record,
// a history record and a plan file is checked here before anything acts
// on it. A record that fails is reported by its key and skipped; the
// others still work. What a check cannot prove (who wrote a configuration)
// the plan shows in full before anything is applied (see DiffConfig).

// deliverPolicies are the deliver policies a consumer configuration names.
var deliverPolicies = map[string]bool{
	"all": true, "last": true, "new": true, "by_start_sequence": true, "by_start_time": true, "last_per_subject": true,
}

// RecordedConfigProblem says what makes raw, a consumer configuration read
// back from a record (an intent, a history record, a plan file, a
// snapshot), unusable as consumer's configuration, or "" when nothing
// does: it must be a JSON object the client library reads as a consumer
// configuration, naming consumer (name, durable_name) where it names one,
// whose filters are subject filters and whose deliver subject (a push
// consumer's) is a plain subject outside the server's own APIs. An empty
// configuration is for the caller to judge.
func RecordedConfigProblem(consumer string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "its configuration is not a consumer configuration: " + err.Error()
	}
	cfg, err := rawConfig(fields).typed()
	if err != nil {
		return "its configuration is not a consumer configuration: " + err.Error()
	}
	for _, n := range []string{cfg.Name, cfg.Durable} {
		if n != "" && n != consumer {
			return fmt.Sprintf("its configuration names consumer %q", n)
		}
	}
	for _, f := range append([]string{cfg.FilterSubject}, cfg.FilterSubjects...) {
		if f == "" {
			continue
		}
		if err := jsutil.CheckSubjectFilter("filter subject", f); err != nil {
			return "its configuration has an " + err.Error()
		}
	}
	if cfg.DeliverSubject != "" {
		if p := jsutil.RecordedSubjectProblem("deliver subject", cfg.DeliverSubject); p != "" {
			return "its configuration's " + p
		}
	}
	if t := cfg.OptStartTime; t != nil && (t.Before(jsutil.MinTime) || t.After(jsutil.MaxTime)) {
		return fmt.Sprintf("its configuration's start time %s is out of range", t.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

// startProblem says what makes a recorded start position unusable.
func startProblem(what string, s *Start) string {
	if s == nil {
		return ""
	}
	if !deliverPolicies[s.DeliverPolicy] {
		return fmt.Sprintf("%s has an unknown deliver policy %q", what, s.DeliverPolicy)
	}
	if t := s.OptStartTime; t != nil && (t.Before(jsutil.MinTime) || t.After(jsutil.MaxTime)) {
		return fmt.Sprintf("%s has a start time out of range", what)
	}
	return ""
}

// firstProblem returns the first non-empty problem.
func firstProblem(problems ...string) string {
	for _, p := range problems {
		if p != "" {
			return p
		}
	}
	return ""
}

// intentProblem says what makes an intent record (parsed and stored
// under its own key, see badIntent) unusable, or "": names a server
// cannot hold, times before 1970 or in the future, configurations that
// are not its consumer's, a configuration to create that differs from the
// recorded one in more than the start, an interest holder that is not the
// change's own, and ack records to forget outside the change's own scope
// and range.
func intentProblem(in *Intent, now time.Time) string {
	p := firstProblem(
		nameProblem("stream", in.Stream), nameProblem("consumer", in.Consumer),
		jsutil.RecordedTimeProblem("its start time", in.Time, now),
		jsutil.RecordedTimePtrProblem("the consumer's recorded creation time", in.Created, now),
		jsutil.RecordedTimePtrProblem("the stream's recorded creation time", in.StreamCreated, now),
		jsutil.RecordedTimePtrProblem("the new consumer's recorded creation time", in.NewCreated, now),
		timeRangeProblem("its target start time", in.StartTime),
		prefixed("the recorded configuration: ", RecordedConfigProblem(in.Consumer, in.Config)),
		prefixed("the configuration to create: ", RecordedConfigProblem(in.Consumer, in.NewConfig)),
		startProblem("the recorded start", in.FromStart),
	)
	if p != "" {
		return "an intent record that cannot be used: " + p
	}
	if in.Time.IsZero() {
		return "an intent record with no start time"
	}
	if in.Claim != nil {
		if p := jsutil.RecordedTimeProblem("claim time", in.Claim.Time, now); p != "" {
			return "an intent record that cannot be used: " + p
		}
	}
	if len(in.Config) > 0 && len(in.NewConfig) > 0 {
		old, err1 := rawOf(in.Config)
		nw, err2 := rawOf(in.NewConfig)
		if err1 == nil && err2 == nil && !sameExceptStart(old.withoutPause(), nw.withoutPause()) {
			diff, _ := DiffConfig(in.Config, in.NewConfig)
			var fields []string
			for _, f := range diff {
				if f.Field != "pause_until" && !isStartKey(f.Field) {
					fields = append(fields, f.Field)
				}
			}
			return fmt.Sprintf("an intent record whose configuration to create differs from the consumer's recorded one in more than its start (%s): no change of jsctl makes that", strings.Join(fields, ", "))
		}
	}
	if in.Hold != "" && in.Hold != TempPrefix+"hold_"+in.ID {
		return fmt.Sprintf("an intent record naming consumer %q as its interest holder, which is not the change's own (%s)", in.Hold, TempPrefix+"hold_"+in.ID)
	}
	if f := in.Forget; f != nil {
		if p := forgetProblem(in, f); p != "" {
			return "an intent record whose ack records to forget " + p
		}
	}
	if in.AcksBucket != "" && !jsutil.BucketNameOK(in.AcksBucket) {
		return fmt.Sprintf("an intent record naming ack-record bucket %q, which is not a bucket name", in.AcksBucket)
	}
	return ""
}

// forgetProblem says what makes the ack records an intent forgets not the
// change's own: another bucket or scope than the change's, or a range that
// does not start at its target.
func forgetProblem(in *Intent, f *Forget) string {
	bucket := in.AcksBucket
	if bucket == "" {
		bucket = acks.DefaultBucket
	}
	scope := acks.DefaultScope(in.Stream, in.Consumer)
	if in.AcksScope != "" {
		scope = acks.ScopeName(in.AcksScope)
	}
	switch {
	case f.Bucket != bucket:
		return fmt.Sprintf("are in bucket %q, not the change's %q", f.Bucket, bucket)
	case f.Scope != scope:
		return fmt.Sprintf("are of scope %q, not the change's %q", acks.ScopeDisplay(f.Scope), acks.ScopeDisplay(scope))
	case acks.CheckScope(f.Scope) != nil:
		return fmt.Sprintf("are of scope %q, which is not a scope", f.Scope)
	case f.From != in.To.Sequence || f.To < f.From:
		return fmt.Sprintf("are sequences %d to %d, not from the change's target %d on", f.From, f.To, in.To.Sequence)
	}
	return ""
}

// historyProblem says what makes a history record (parsed and stored
// under its consumer's key, see badHistory) unusable, or "".
func historyProblem(r *Record, now time.Time) string {
	p := firstProblem(
		jsutil.RecordedTimeProblem("its time", r.Time, now),
		jsutil.RecordedTimePtrProblem("the stream's recorded creation time", r.StreamCreated, now),
		jsutil.RecordedTimePtrProblem("the consumer's recorded creation time", r.Created, now),
		jsutil.RecordedTimePtrProblem("the new consumer's recorded creation time", r.NewCreated, now),
		prefixed("the configuration before the change: ", RecordedConfigProblem(r.Consumer, r.Config)),
		prefixed("the configuration after the change: ", RecordedConfigProblem(r.Consumer, r.NewConfig)),
		startProblem("the start before the change", r.FromStart),
	)
	switch {
	case p != "":
		return "a history record that cannot be used: " + p
	case r.Method != Reset && r.Method != Recreate && r.Method != Create:
		return fmt.Sprintf("a history record with unknown method %q", r.Method)
	case r.From.AckFloor == math.MaxUint64 || r.From.Delivered == math.MaxUint64:
		return "a history record with a position past the largest sequence"
	}
	return ""
}

// planProblem says what makes one change of a plan file unusable, or "".
func planProblem(c *Change, now time.Time) string {
	return firstProblem(
		nameProblem("consumer", c.Consumer),
		prefixed("its configuration: ", RecordedConfigProblem(c.Consumer, c.Config)),
		startProblem("its start to restore", c.RestoreStart),
		jsutil.RecordedTimePtrProblem("its consumer's recorded creation time", c.Created, now),
		timeRangeProblem("its start time", c.StartTime),
		sourceProblem(c.Source, now),
	)
}

func sourceProblem(s *Source, now time.Time) string {
	if s == nil {
		return ""
	}
	return firstProblem(nameProblem("source consumer", s.Consumer),
		jsutil.RecordedTimePtrProblem("its source consumer's recorded creation time", s.Created, now))
}

func nameProblem(what, name string) string {
	if why := jsutil.NameProblem(name); why != "" {
		return fmt.Sprintf("%s name %q is not a name a server can hold: %s", what, name, why)
	}
	return ""
}

func timeRangeProblem(what string, t *time.Time) string {
	if t != nil && (t.Before(jsutil.MinTime) || t.After(jsutil.MaxTime)) {
		return fmt.Sprintf("%s %s is out of range", what, t.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

func prefixed(prefix, p string) string {
	if p == "" {
		return ""
	}
	return prefix + p
}

func isStartKey(k string) bool {
	for _, s := range startKeys {
		if s == k {
			return true
		}
	}
	return false
}

// esc is text read from a record (a user, a host, a change id), escaped
// for a terminal (jsutil.Escape) where it is put into a message.
func esc(s string) string {
	out, _ := jsutil.Escape([]byte(s), 0)
	return out
}
