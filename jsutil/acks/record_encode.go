package acks

import (
	"encoding/json"
	"strconv"
)

// encode is the stored form of v: what json.Marshal makes of it, byte for
// byte (TestValueEncodeIsJSON), without reflection: two records are
// written per message.
func (v value) encode() []byte {
	b := make([]byte, 0, 160)
	b = append(b, `{"s":`...)
	b = appendString(b, string(v.State))
	b = append(b, `,"q":`...)
	b = strconv.AppendUint(b, v.Seq, 10)
	b = appendStringField(b, `,"h":`, v.Hash)
	b = appendStringField(b, `,"w":`, v.Worker)
	b = appendUintField(b, `,"f":`, v.Fence)
	b = appendUintField(b, `,"d":`, v.Deliveries)
	b = appendIntField(b, `,"x":`, v.Expires)
	b = appendStringField(b, `,"k":`, v.Key)
	b = appendStringField(b, `,"r":`, v.Reason)
	b = appendUintField(b, `,"n":`, v.Failures)
	if v.Final {
		b = append(b, `,"t":true`...)
	}
	b = appendStringField(b, `,"ks":`, v.Spec)
	b = appendIntField(b, `,"rt":`, v.Retention)
	b = appendStringField(b, `,"ls":`, v.DLSubject)
	b = appendStringField(b, `,"li":`, v.DLID)
	b = appendStringField(b, `,"lt":`, v.DLStream)
	b = appendUintField(b, `,"lq":`, v.DLSeq)
	b = appendStringField(b, `,"sc":`, v.StreamCreated)
	b = appendStringField(b, `,"cc":`, v.ConsumerCreated)
	return append(b, '}')
}

// The fields below are omitted when empty, as omitempty does.

func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, name...), s)
}

func appendUintField(b []byte, name string, n uint64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendUint(append(b, name...), n, 10)
}

func appendIntField(b []byte, name string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), n, 10)
}

// appendString appends s as a JSON string: as it is when json.Marshal
// would not escape any of its bytes, through json.Marshal otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
