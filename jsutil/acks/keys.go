package acks

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
)

// Key layout in the bucket. Every token is a jsutil.KeyToken, so any legal
// stream, consumer, scope or header value maps to a valid KV key:
//
//	r.<scope tokens...>.<dedup>                 one ack record
//	f.<scope tokens...>.c<stream>/<consumer>    one consumer's floor in the scope
//	f.<scope tokens...>                         a scope-wide floor of earlier versions
//
// A scope is one or more tokens joined by '.'; the dedup token is always
// the last token of a record key, so "r.<scope>.*" lists exactly the
// records of one scope (and not those of a longer scope that starts with
// the same tokens). The dedup token is a letter for where the key came
// from followed by KeyToken(key): "h" a header, "j" a JSON field, "u" the
// subject or one of its tokens, "p" several parts joined (JoinKeyParts), "f"
// a KeyFunc; or "s" + the stream sequence. A key whose token would be longer
// than maxKeyToken is replaced by "g" + the hex SHA-256 of the key (header
// keys, as earlier versions wrote them) or "g" + the letter + that hash (the
// key itself is then kept in the record). Header and sequence keys are the
// same as in earlier versions, so their records keep matching.
const (
	recordPrefix = "r."
	floorPrefix  = "f."
)

// KeyKind says where a record's dedup key came from.
type KeyKind string

// Key kinds.
const (
	KeyFromHeader   KeyKind = "header"
	KeyFromSequence KeyKind = "sequence"
	KeyFromJSON     KeyKind = "json"
	KeyFromSubject  KeyKind = "subject"
	// KeyFromParts: a key of several parts (several key specs).
	KeyFromParts KeyKind = "parts"
	// KeyFromFunc: a key from a KeyFunc.
	KeyFromFunc KeyKind = "func"
)

// KeyKinds lists the kinds of value keys (all but KeyFromSequence), in the
// order a lookup by key tries them.
var KeyKinds = []KeyKind{KeyFromHeader, KeyFromJSON, KeyFromSubject, KeyFromParts, KeyFromFunc}

// kindLetters are the first letters of dedup tokens.
var kindLetters = map[KeyKind]byte{KeyFromHeader: 'h', KeyFromJSON: 'j', KeyFromSubject: 'u', KeyFromParts: 'p', KeyFromFunc: 'f'}

func letterKind(c byte) (KeyKind, bool) {
	for k, l := range kindLetters {
		if l == c {
			return k, true
		}
	}
	return "", false
}

// DefaultScope is the scope of a consumer that does not share its records:
// "STREAM.CONSUMER", each part encoded with jsutil.KeyToken.
func DefaultScope(stream, consumer string) string {
	return jsutil.KeyToken(stream) + "." + jsutil.KeyToken(consumer)
}

// ScopeName encodes a user-chosen scope name (as given to --scope) into a
// scope: each '.'-separated part is encoded with jsutil.KeyToken, so
// ScopeName("ORDERS.billing") == DefaultScope("ORDERS", "billing").
func ScopeName(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = jsutil.KeyToken(p)
	}
	return strings.Join(parts, ".")
}

// ScopeDisplay turns a scope back into the name a person gave
// (the reverse of ScopeName). A token that does not decode is kept as is.
func ScopeDisplay(scope string) string {
	parts := strings.Split(scope, ".")
	for i, p := range parts {
		if d, err := jsutil.KeyTokenDecode(p); err == nil {
			parts[i] = d
		}
	}
	return strings.Join(parts, ".")
}

// CheckScope reports whether scope is a well-formed scope: one or more
// '.'-separated tokens, each exactly as jsutil.KeyToken writes it.
func CheckScope(scope string) error {
	if scope == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "empty ack scope")
	}
	if len(scope) > maxScope {
		return jsutil.Errorf(jsutil.ErrBadInput, "ack scope of %d bytes: at most %d (its record keys must fit the server's protocol line)", len(scope), maxScope)
	}
	for _, tok := range strings.Split(scope, ".") {
		d, err := jsutil.KeyTokenDecode(tok)
		if err != nil || tok == "" || jsutil.KeyToken(d) != tok {
			return jsutil.Errorf(jsutil.ErrBadInput, "bad ack scope %q: token %q is not a key token (build scopes with DefaultScope or ScopeName)", scope, tok)
		}
	}
	return nil
}

// maxScope bounds an encoded scope: with the bucket and the key token its
// record keys stay within the server's 4 KiB protocol line. The default
// scope of two 255-byte names fits even with every byte escaped.
const maxScope = 2048

// maxKeyToken bounds the encoded header token, so that keys stay far below
// the server's subject length limits whatever the header holds.
const maxKeyToken = 200

// dedupToken is the last token of a record key.
func dedupToken(kind KeyKind, key string) string {
	letter, ok := kindLetters[kind]
	if !ok {
		return "s" + key
	}
	if tok := jsutil.KeyToken(key); len(tok) <= maxKeyToken {
		return string(letter) + tok
	}
	h := sha256.Sum256([]byte(key))
	if kind == KeyFromHeader {
		return "g" + hex.EncodeToString(h[:])
	}
	return "g" + string(letter) + hex.EncodeToString(h[:])
}

// hashedKey reports whether key's record key holds a hash of it (so the
// record must keep the key itself).
func hashedKey(kind KeyKind, key string) bool {
	_, value := kindLetters[kind]
	return value && len(jsutil.KeyToken(key)) > maxKeyToken
}

// parseDedupToken reverses dedupToken.
func parseDedupToken(tok string) (KeyKind, string, bool) {
	if len(tok) < 2 {
		return "", "", false
	}
	switch tok[0] {
	case 'g': // the key is in the record's value
		if len(tok) == 65 {
			return KeyFromHeader, "", true
		}
		kind, ok := letterKind(tok[1])
		return kind, "", ok && len(tok) == 66
	case 's':
		_, err := strconv.ParseUint(tok[1:], 10, 64)
		return KeyFromSequence, tok[1:], err == nil
	}
	kind, ok := letterKind(tok[0])
	if !ok {
		return "", "", false
	}
	v, err := jsutil.KeyTokenDecode(tok[1:])
	return kind, v, err == nil
}

func recordKey(scope string, kind KeyKind, key string) string {
	return recordPrefix + scope + "." + dedupToken(kind, key)
}

// floorKey is the key of one consumer's floor in scope. Its last token
// holds a '/', which no KeyToken contains, so it never reads as a scope
// token: "f.<scope>.*" lists the floors of exactly one scope.
func floorKey(scope, stream, consumer string) string {
	return floorPrefix + scope + "." + consumerToken(stream, consumer)
}

func consumerToken(stream, consumer string) string {
	return "c" + jsutil.KeyToken(stream) + "/" + jsutil.KeyToken(consumer)
}

// legacyFloorKey is the scope-wide floor written by earlier versions.
func legacyFloorKey(scope string) string { return floorPrefix + scope }

// parseFloorKey splits a floor key into scope, stream and consumer; legacy
// is set for a scope-wide floor of an earlier version (no consumer).
func parseFloorKey(k string) (scope, stream, consumer string, legacy, ok bool) {
	if !strings.HasPrefix(k, floorPrefix) || len(k) == len(floorPrefix) {
		return "", "", "", false, false
	}
	rest := k[len(floorPrefix):]
	i := strings.LastIndexByte(rest, '.')
	last := rest[i+1:]
	slash := strings.IndexByte(last, '/')
	if slash < 0 {
		return rest, "", "", true, CheckScope(rest) == nil
	}
	if i <= 0 || last[0] != 'c' {
		return "", "", "", false, false
	}
	st, err1 := jsutil.KeyTokenDecode(last[1:slash])
	co, err2 := jsutil.KeyTokenDecode(last[slash+1:])
	return rest[:i], st, co, false, err1 == nil && err2 == nil
}

// parseRecordKey splits a record key into scope and dedup key.
func parseRecordKey(k string) (scope string, kind KeyKind, key string, ok bool) {
	if !strings.HasPrefix(k, recordPrefix) {
		return "", "", "", false
	}
	rest := k[len(recordPrefix):]
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", "", "", false
	}
	kind, key, ok = parseDedupToken(rest[i+1:])
	return rest[:i], kind, key, ok
}
