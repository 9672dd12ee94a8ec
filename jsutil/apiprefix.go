package jsutil

import (
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// APIPrefix returns the JetStream API subject prefix (with its final dot)
// that a jetstream.JetStream made with these options sends requests to:
// "$JS.<domain>.API." for a domain, the custom prefix of
// jetstream.NewWithAPIPrefix, or the default "$JS.API.".
func APIPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}
