package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// failoverReadmeCases are docs/failover.md's command lines (merged into
// readmeCases). They run against readmeFixture's replicas of ORDERS:
// DR_ORDERS, a mirror, and ALL_ORDERS, a stream sourcing it.
var failoverReadmeCases = map[string]readmeCase{
	"jsctl consumer check DR_ORDERS --all --replica-lag-warn 100 --replica-lag-time-crit 5m": {},
	"jsctl seek DR_ORDERS --origin ORDERS:42 --around 2":                                     {},
	"jsctl seek DR_ORDERS --origin ORDERS:42 --json":                                         {},
	"jsctl seek DR_ORDERS --origin ORDERS:42 --around 1":                                     {},
	"jsctl seek ALL_ORDERS --origin ORDERS:42":                                               {},
	"jsctl --js-domain leaf seek DR_ORDERS --origin ORDERS:42 --origin-js-domain hub": {
		run: "jsctl seek DR_ORDERS --origin ORDERS:42", why: "the fixture has no leaf node or domains (jsutil/replica TestTranslateHubLeaf runs that case)"},
	"jsctl consumer check DR_ORDERS --all --replica-lag-warn 1000 --replica-lag-crit 10000 --replica-lag-time-warn 1m --replica-lag-time-crit 10m": {},
	"jsctl consumer check DR_ORDERS --all --replica-lag-warn 1000 --format prometheus":                                                             {},
}

func init() {
	for line, c := range failoverReadmeCases {
		readmeCases[line] = c
	}
}

// addReadmeReplicas adds docs/failover.md's replicas of ORDERS to the
// fixture: DR_ORDERS (a mirror) and ALL_ORDERS (a stream sourcing it). It
// returns once both hold ORDERS's messages.
func addReadmeReplicas(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "DR_ORDERS", Mirror: &jetstream.StreamSource{Name: "ORDERS"}},
		{Name: "ALL_ORDERS", Sources: []*jetstream.StreamSource{{Name: "ORDERS"}}},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	orders, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	want := orders.CachedInfo().State.Msgs
	for _, name := range []string{"DR_ORDERS", "ALL_ORDERS"} {
		testserver.WaitFor(t, 30*time.Second, name+" to copy ORDERS", func() bool {
			s, err := js.Stream(ctx, name)
			return err == nil && s.CachedInfo().State.Msgs == want
		})
	}
}
