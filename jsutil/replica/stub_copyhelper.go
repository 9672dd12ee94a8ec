// TEMPORARY stand-in for h-translate's package (same API); deleted when
// h-translate is merged. Never part of the final branch.
package replica

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

type Side struct {
	JS     jetstream.JetStream
	Stream string
}

type Method string

const (
	Mirror Method = "mirror"
	Source Method = "source"
	ByTime Method = "by-time"
)

type Result struct {
	Origin    string
	OriginSeq uint64
	Target    string
	TargetSeq uint64
	FromSeq   uint64
	Method    Method
	Behind    uint64
	Requests  int
}

func Translate(ctx context.Context, origin Side, originSeq uint64, target Side) (*Result, error) {
	r := &Result{Origin: origin.Stream, OriginSeq: originSeq, Target: target.Stream}
	ts, err := target.JS.Stream(ctx, target.Stream)
	if err != nil {
		return nil, err
	}
	ti := ts.CachedInfo()
	os, err := origin.JS.Stream(ctx, origin.Stream)
	if err != nil {
		return nil, err
	}
	oi := os.CachedInfo()
	r.Requests = 2
	if m := ti.Config.Mirror; m != nil && m.Name == origin.Stream {
		r.Method = Mirror
		if originSeq <= ti.State.LastSeq {
			r.TargetSeq, r.FromSeq = max(originSeq, ti.State.FirstSeq), max(originSeq, ti.State.FirstSeq)
			return r, nil
		}
		if oi.State.LastSeq > ti.State.LastSeq {
			r.Behind = oi.State.LastSeq - ti.State.LastSeq
			return r, nil
		}
		r.TargetSeq = ti.State.LastSeq + 1
		return r, nil
	}
	r.Method = Source
	var lag uint64
	found := false
	for _, si := range ti.Sources {
		if si.Name == origin.Stream {
			lag, found = si.Lag, true
		}
	}
	if !found {
		return nil, fmt.Errorf("stream %q does not source %q", target.Stream, origin.Stream)
	}
	// first target message from origin with origin seq >= originSeq
	get := func(seq uint64) (uint64, bool) {
		r.Requests++
		m, err := ts.GetMsg(ctx, seq)
		if err != nil {
			return 0, false
		}
		f := strings.Fields(m.Header.Get("Nats-Stream-Source"))
		if len(f) < 2 || f[0] != origin.Stream {
			return 0, false
		}
		n, _ := strconv.ParseUint(f[1], 10, 64)
		return n, true
	}
	for seq := ti.State.FirstSeq; seq <= ti.State.LastSeq && seq > 0; seq++ {
		if n, ok := get(seq); ok && n >= originSeq {
			r.TargetSeq, r.FromSeq = seq, n
			return r, nil
		}
	}
	if lag > 0 && originSeq <= oi.State.LastSeq {
		r.Behind = lag
		return r, nil
	}
	r.TargetSeq = ti.State.LastSeq + 1
	return r, nil
}
