package reset

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Priority is a consumer's priority settings (nats-server 2.11+) as the
// plan shows them: its policy, its groups and, per group, the client the
// server pinned (policy pinned_client). A recreate sends back the whole
// configuration it read, so every priority setting is kept; the pin itself
// is the server's state, not configuration: an in-place reset keeps it, a
// recreate drops it (the next pull request of the group gets a new pin).
// Options.Unpin releases it after the move (see Unpin).
type Priority struct {
	// Policy is "overflow", "pinned_client" or "prioritized".
	Policy string `json:"policy"`
	// PinnedTTLNS is how long a pinned client keeps its pin without
	// sending a pull request (pinned_client).
	PinnedTTLNS int64           `json:"pinned_ttl_ns,omitempty"`
	Groups      []PriorityGroup `json:"groups"`
	// Unpin says the change releases the pins after the move.
	Unpin bool `json:"unpin,omitempty"`
}

// PriorityGroup is one priority group and its pinned client, if any.
type PriorityGroup struct {
	Group string `json:"group"`
	// PinnedClientID is the pin the server gave the client it pinned
	// ("" when none is pinned); PinnedSince when.
	PinnedClientID string     `json:"pinned_client_id,omitempty"`
	PinnedSince    *time.Time `json:"pinned_since,omitempty"`
	// Unpinned is set once the change released the pin.
	Unpinned bool `json:"unpinned,omitempty"`
}

// priorityOf is the priority part of a consumer's plan (nil without
// priority groups).
func priorityOf(st *consumerState, unpin bool) *Priority {
	cfg := st.info.Config
	if len(cfg.PriorityGroups) == 0 {
		return nil
	}
	policy, _ := json.Marshal(cfg.PriorityPolicy)
	var p string
	_ = json.Unmarshal(policy, &p)
	pr := &Priority{Policy: p, PinnedTTLNS: cfg.PinnedTTL.Nanoseconds(), Unpin: unpin}
	for _, g := range cfg.PriorityGroups {
		pg := PriorityGroup{Group: g}
		for _, s := range st.info.PriorityGroups {
			if s.Group == g && s.PinnedClientID != "" {
				t := s.PinnedTS.UTC()
				pg.PinnedClientID, pg.PinnedSince = s.PinnedClientID, &t
			}
		}
		pr.Groups = append(pr.Groups, pg)
	}
	return pr
}

// Unpin releases, after Execute, the pinned clients of the plan's moved
// consumers whose plan asked for it (Options.Unpin): each group that has
// a pinned client now is unpinned with the server's consumer unpin API,
// and the server then pins the next client that asks. A consumer that was
// not moved is left alone. A failure is a warning of its change: the move
// itself is made.
func Unpin(ctx context.Context, js jetstream.JetStream, plan *Plan, opts Options) {
	opts = opts.withDefaults()
	for _, c := range plan.Changes {
		if c.Priority == nil || !c.Priority.Unpin || !c.Applied {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		st, err := loadConsumer(lctx, js, c.Stream, c.Consumer)
		cancel()
		if err != nil {
			c.warn("not unpinned: %v", jsutil.Wrap(err, "read consumer %q on %q", c.Consumer, c.Stream))
			continue
		}
		now := priorityOf(st, true)
		for i := range c.Priority.Groups {
			g := &c.Priority.Groups[i]
			pinned := false
			if now != nil {
				for _, ng := range now.Groups {
					pinned = pinned || ng.Group == g.Group && ng.PinnedClientID != ""
				}
			}
			if !pinned {
				continue // none pinned now (a recreate dropped the pin)
			}
			if err := unpinConsumer(ctx, js, c.Stream, c.Consumer, g.Group, opts.Timeout); err != nil {
				c.warn("not unpinned: %v", err)
				continue
			}
			g.Unpinned = true
		}
	}
}

// unpinConsumer calls the server's consumer unpin API for group.
func unpinConsumer(ctx context.Context, js jetstream.JetStream, stream, consumer, group string, timeout time.Duration) error {
	body, err := json.Marshal(map[string]string{"group": group})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = request(ctx, js, fmt.Sprintf("CONSUMER.UNPIN.%s.%s", stream, consumer), body)
	return jsutil.Wrap(err, "unpin group %q of consumer %q on %q", group, consumer, stream)
}
