// Package audit is jsctl's audit trail: one event per object a changing
// command changed, appended to the stream JSCTL_AUDIT (created on first
// use) on the subject jsctl.audit.<action>.<stream>.<consumer>, with the
// change's id as Nats-Msg-Id so a publish sent again is one event. The
// event schema is versioned (Event.V); docs/audit.md is its contract.
package audit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// Stream is the audit stream; SubjectPrefix starts every event's subject.
const (
	Stream        = "JSCTL_AUDIT"
	SubjectPrefix = "jsctl.audit"
	// Version is the event schema's version (Event.V).
	Version = 1
	// DefaultMaxAge is how long the stream keeps events when jsctl
	// creates it.
	DefaultMaxAge = 90 * 24 * time.Hour
)

// Action is what a changing command did to an object.
type Action string

// The actions, one per changing command.
const (
	Reset           Action = "reset"
	Recover         Action = "recover"
	SnapshotSave    Action = "snapshot.save"
	SnapshotRestore Action = "snapshot.restore"
	SnapshotRm      Action = "snapshot.rm"
	Copy            Action = "copy"
	Pause           Action = "pause"
	Resume          Action = "resume"
	AcksForget      Action = "acks.forget"
	AcksRetry       Action = "acks.retry"
	AcksCompact     Action = "acks.compact"
)

// Actions lists every action, in the order of docs/audit.md.
func Actions() []Action {
	return []Action{Reset, Recover, SnapshotSave, SnapshotRestore, SnapshotRm, Copy, Pause, Resume, AcksForget, AcksRetry, AcksCompact}
}

// Known reports whether a is one of Actions.
func (a Action) Known() bool { return slices.Contains(Actions(), a) }

// Outcome is how the change ended.
type Outcome string

// The outcomes.
const (
	// Verified: the change was made and the server's reply shows it.
	Verified Outcome = "verified"
	// Failed: the change was not made, or was put back.
	Failed Outcome = "failed"
	// Left: the change was left unfinished for `consumer recover`.
	Left Outcome = "left"
	// Recovered: `consumer recover` finished a change an interrupted run
	// left (Event.Recovers names it).
	Recovered Outcome = "recovered"
)

// Object is a stream or consumer an event is about, with when the server
// created it (nil when it does not exist or is not known).
type Object struct {
	Name    string     `json:"name"`
	Created *time.Time `json:"created"`
}

// State is a consumer as a plain client's consumer info shows it.
type State struct {
	Delivered    uint64     `json:"delivered"`
	AckFloor     uint64     `json:"ack_floor"`
	AckFloorTime *time.Time `json:"ack_floor_time"`
	Paused       bool       `json:"paused"`
	// ConfigHash identifies the configuration (ConfigHash).
	ConfigHash string `json:"config_hash"`
	// ConfigChanges, in After only, lists the fields that differ from
	// Before's configuration when the hashes differ.
	ConfigChanges []reset.ConfigField `json:"config_changes,omitempty"`

	config json.RawMessage
}

// Identity is who made the change: the operating system's user and host
// and the NATS identity the connection authenticated as.
type Identity struct {
	User string          `json:"user"`
	Host string          `json:"host"`
	NATS jsutil.NATSUser `json:"nats"`
}

// Event is one audit record (schema v1, docs/audit.md).
type Event struct {
	V int `json:"v"`
	// ID is the change's id, also the message's Nats-Msg-Id.
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Action   Action    `json:"action"`
	Stream   Object    `json:"stream"`
	Consumer Object    `json:"consumer"`
	// Before and After are the consumer before and after the change (nil:
	// it did not exist).
	Before  *State  `json:"before"`
	After   *State  `json:"after"`
	Method  string  `json:"method,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Recovers is, for outcome recovered, the interrupted change's id.
	Recovers string `json:"recovers,omitempty"`
	// Target is the plan's target in words ("sequence 120", "snapshot
	// pre-deploy", "until resumed").
	Target string `json:"target"`
	// Command is the command line, secrets removed.
	Command []string `json:"command"`
	Identity
	Reason string `json:"reason"`
	// Detail holds what an action adds (records forgotten, a snapshot's
	// name).
	Detail map[string]any `json:"detail,omitempty"`
	Error  string         `json:"error,omitempty"`
	// JsctlVersion is the version of the jsctl that wrote the event.
	JsctlVersion string `json:"jsctl_version"`

	// Stored and Warnings are not written by commands: Read sets them,
	// whatever the message holds. Stored is when the server stored the
	// event's message (the one time no publisher chooses); Warnings say
	// which of the event's own fields cannot be true (see Implausible).
	Stored   time.Time `json:"stored,omitzero"`
	Warnings []string  `json:"warnings,omitempty"`
}

// NewID is a new change id (16 hex digits), for a change that has none of
// its own (reset's come from its intent records).
func NewID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Subject is the subject of an event: jsctl.audit.<action>.<stream>.<consumer>,
// each name one token escaped as jsutil.KeyToken (every byte but ASCII
// letters, digits, '-' and '_' as =XX), so no name can add or remove a
// token.
func Subject(a Action, stream, consumer string) string {
	return SubjectPrefix + "." + string(a) + "." + jsutil.KeyToken(stream) + "." + jsutil.KeyToken(consumer)
}

// Filters are the subjects that hold the events of stream and consumer
// ("" = any), for actions (none = all).
func Filters(stream, consumer string, actions []Action) []string {
	if len(actions) == 0 && stream == "" {
		return []string{SubjectPrefix + ".>"}
	}
	if len(actions) == 0 {
		actions = Actions()
	}
	s, c := "*", "*"
	if stream != "" {
		s = jsutil.KeyToken(stream)
	}
	if consumer != "" {
		c = jsutil.KeyToken(consumer)
	}
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		out = append(out, SubjectPrefix+"."+string(a)+"."+s+"."+c)
	}
	return out
}

// StateOf is the state of a consumer read with positions.Read.
func StateOf(c *positions.Consumer) *State {
	if c == nil || c.Info == nil {
		return nil
	}
	st := &State{
		Delivered: c.Info.Delivered.Stream, AckFloor: c.Info.AckFloor.Stream, AckFloorTime: c.AckFloorTime,
		Paused: c.Info.Paused, config: c.Config,
	}
	st.ConfigHash = ConfigHash(c.Config)
	return st
}

// Compare fills after's ConfigChanges from before's configuration when
// their hashes differ.
func Compare(before, after *State) {
	if before == nil || after == nil || before.ConfigHash == after.ConfigHash {
		return
	}
	if diff, err := reset.DiffConfig(before.config, after.config); err == nil && len(diff) > 0 {
		after.ConfigChanges = diff
	}
}

// ConfigHash is "sha256:" and the first 16 hex digits of the SHA-256 of a
// consumer configuration with its keys sorted, without pause_until (State
// has Paused for it) and the metadata the server adds ("_nats." keys).
func ConfigHash(cfg json.RawMessage) string {
	var m map[string]any
	if len(cfg) == 0 || json.Unmarshal(cfg, &m) != nil {
		return ""
	}
	delete(m, "pause_until")
	if md, ok := m["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "_nats.") {
				delete(md, k)
			}
		}
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	b, err := json.Marshal(m) // encoding/json sorts map keys
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// Decode reads an event from a message's data, refusing what is not a v1
// event of a known action with names (anyone allowed to publish on
// jsctl.audit.> can put anything there).
func Decode(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("not an audit event: %w", err)
	}
	switch {
	case e.V != Version:
		return nil, fmt.Errorf("audit event of schema version %d (this jsctl reads %d)", e.V, Version)
	case !e.Action.Known():
		return nil, fmt.Errorf("audit event with unknown action %q", e.Action)
	case e.ID == "":
		return nil, fmt.Errorf("audit event without an id")
	case e.Stream.Name == "":
		return nil, fmt.Errorf("audit event without a stream")
	}
	return &e, nil
}
