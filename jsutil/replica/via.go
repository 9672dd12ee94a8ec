package replica

import (
	"context"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// OriginVia returns the Side of stream origin as target's configuration
// reaches it: through the external API prefix of target's mirror or source
// named origin (a stream in another JetStream domain or account) on
// target's connection, or on target's own JetStream handle when that names
// none (or target copies no stream of that name). One request.
func OriginVia(ctx context.Context, target Side, origin string) (Side, error) {
	t := &translator{target: target}
	info, err := t.info(ctx, target)
	if err != nil {
		return Side{}, err
	}
	var ext *jetstream.ExternalStream
	if m := info.Config.Mirror; m != nil && m.Name == origin {
		ext = m.External
	}
	for _, s := range info.Config.Sources {
		if s != nil && s.Name == origin && ext == nil {
			ext = s.External
		}
	}
	if ext == nil || ext.APIPrefix == "" {
		return Side{JS: target.JS, Stream: origin}, nil
	}
	js, err := jetstream.NewWithAPIPrefix(target.JS.Conn(), ext.APIPrefix, timeoutOf(target.JS))
	if err != nil {
		return Side{}, err
	}
	return Side{JS: js, Stream: origin}, nil
}

// SideInDomain returns stream in JetStream domain on js's connection (as
// a leaf node's client reaches its hub's streams).
func SideInDomain(js jetstream.JetStream, stream, domain string) (Side, error) {
	d, err := jetstream.NewWithDomain(js.Conn(), domain, timeoutOf(js))
	if err != nil {
		return Side{}, jsutil.Errorf(jsutil.ErrBadInput, "jetstream domain %q: %w", domain, err)
	}
	return Side{JS: d, Stream: stream}, nil
}

// timeoutOf keeps js's request timeout on a handle made from its
// connection.
func timeoutOf(js jetstream.JetStream) jetstream.JetStreamOpt {
	return jetstream.WithDefaultTimeout(js.Options().DefaultTimeout)
}
