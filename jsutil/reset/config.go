package reset

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// startKeys are the configuration fields that say where a consumer starts.
var startKeys = []string{"deliver_policy", "opt_start_seq", "opt_start_time"}

// decoded is c without the server's own metadata, decoded for comparison;
// without start, the start fields are left out too.
func (c rawConfig) decoded(start bool) any {
	d := c.withoutServerMetadata()
	if !start {
		for _, k := range startKeys {
			delete(d, k)
		}
	}
	b, _ := json.Marshal(d)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// sameExceptStart reports whether a and b are the same configuration apart
// from where the consumer starts.
func sameExceptStart(a, b rawConfig) bool {
	return reflect.DeepEqual(a.decoded(false), b.decoded(false))
}

// start is the start position part of c.
func (c rawConfig) start() Start {
	var s struct {
		DeliverPolicy string     `json:"deliver_policy"`
		OptStartSeq   uint64     `json:"opt_start_seq"`
		OptStartTime  *time.Time `json:"opt_start_time"`
	}
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &s)
	return Start{DeliverPolicy: s.DeliverPolicy, OptStartSeq: s.OptStartSeq, OptStartTime: s.OptStartTime}
}

// sameStart reports whether a and b start the consumer at the same place.
func sameStart(a, b rawConfig) bool {
	sa, sb := a.start(), b.start()
	return sa.equal(&sb)
}

// typed decodes c into the client library's configuration.
func (c rawConfig) typed() (jetstream.ConsumerConfig, error) {
	var cfg jetstream.ConsumerConfig
	b, err := json.Marshal(c)
	if err != nil {
		return cfg, err
	}
	err = json.Unmarshal(b, &cfg)
	return cfg, err
}

// rawOf turns saved JSON into a configuration.
func rawOf(b json.RawMessage) (rawConfig, error) {
	var c rawConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return c, nil
}

// json is c as JSON (nil for nil).
func (c rawConfig) json() json.RawMessage {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(c)
	return b
}

// createdAt is when the server created the consumer.
func (s *consumerState) createdAt() *time.Time { return jsutil.TimePtr(s.info.Created) }

// identity is the consumer's identity as the server holds it now.
func (s *consumerState) identity() jsutil.Identity { return jsutil.ConsumerIdentity(s.info) }

// madeAt reports whether s is known to be the consumer created at t (nil:
// none is): jsutil.Identity.Is.
func (s *consumerState) madeAt(t *time.Time) bool {
	return jsutil.RecordedConsumer(s.info.Stream, s.info.Name, t).Is(s.identity())
}
