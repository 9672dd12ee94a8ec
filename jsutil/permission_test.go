package jsutil_test

import (
	"errors"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
)

func TestDescribeAPISubject(t *testing.T) {
	for subj, want := range map[string]string{
		"$JS.API.STREAM.INFO.ORDERS":                             `read stream "ORDERS"`,
		"$JS.hub.API.STREAM.MSG.GET.ORDERS":                      `get messages of stream "ORDERS"`,
		"$JS.API.DIRECT.GET.ORDERS":                              `get messages of stream "ORDERS"`,
		"$JS.API.CONSUMER.CREATE.ORDERS.jsctl_tmp_abc.orders.us": `create a temporary consumer on stream "ORDERS"`,
		"$JS.API.CONSUMER.CREATE.ORDERS.billing":                 `create consumer "billing" on stream "ORDERS"`,
		"$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.billing":         `create consumer "billing" on stream "ORDERS"`,
		"$JS.API.CONSUMER.RESET.ORDERS.billing":                  `reset consumer "billing" of stream "ORDERS"`,
		"$JS.API.CONSUMER.INFO.ORDERS.billing":                   `read consumer "billing" of stream "ORDERS"`,
		"$JS.API.CONSUMER.NAMES.ORDERS":                          `list the consumers of stream "ORDERS"`,
		"$JS.API.STREAM.NAMES":                                   `list streams`,
		"$JS.API.INFO":                                           `read the account's JetStream information`,
		"custom.API.STREAM.DELETE.ORDERS":                        `delete stream "ORDERS"`,
		"$JS.API.CONSUMER.MSG.NEXT.ORDERS.billing":               `fetch from consumer "billing" of stream "ORDERS"`,
		"$JS.API.ACCOUNT.PURGE.x":                                `use the JetStream API (ACCOUNT.PURGE.x)`,
	} {
		if got := jsutil.DescribeAPISubject(subj); got != want {
			t.Errorf("DescribeAPISubject(%q) = %q, want %q", subj, got, want)
		}
	}
	err := jsutil.DeniedError("$JS.API.STREAM.INFO.ORDERS")
	if !errors.Is(err, jsutil.ErrPermission) || err.Error() != `permission denied: this user may not read stream "ORDERS" (the server refused a publish to "$JS.API.STREAM.INFO.ORDERS")` {
		t.Errorf("DeniedError = %v", err)
	}
	if got := jsutil.DeniedSubject(errors.New(`nats: permissions violation: Permissions Violation for Publish to "$JS.API.X"`)); got != "$JS.API.X" {
		t.Errorf("DeniedSubject = %q", got)
	}
}
