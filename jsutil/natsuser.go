package jsutil

import (
	"os"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// NATSUser is the identity a connection authenticates as, as the client
// knows it from its credentials: a user name, an nkey's public key, or a
// user JWT's subject and name. Secrets (passwords, tokens, seeds) are never
// part of it. Kind is "user", "nkey", "jwt", "token", "embedded" or "none".
type NATSUser struct {
	Kind    string `json:"kind"`
	User    string `json:"user,omitempty"`
	NKey    string `json:"nkey,omitempty"`
	JWTSub  string `json:"jwt_subject,omitempty"`
	JWTName string `json:"jwt_name,omitempty"`
	// Account is the issuer account of a user JWT.
	Account string `json:"account,omitempty"`
}

// String says who it is in a few words: the user name, the JWT's name (or
// subject), or the nkey.
func (u NATSUser) String() string {
	switch {
	case u.User != "":
		return u.User
	case u.JWTName != "":
		return u.JWTName
	case u.JWTSub != "":
		return u.JWTSub
	case u.NKey != "":
		return u.NKey
	}
	return ""
}

// natsUserOf is the identity options o (resolved) authenticate as, in the
// order authOptions prefers them. A file that cannot be read leaves the
// field empty: Connect has refused it before this is asked.
func natsUserOf(o ConnectOptions) NATSUser {
	switch {
	case o.InProcess != nil:
		return NATSUser{Kind: "embedded"}
	case o.User != "":
		return NATSUser{Kind: "user", User: o.User}
	case o.Creds != "":
		u := NATSUser{Kind: "jwt"}
		data, err := os.ReadFile(o.Creds)
		if err != nil {
			return u
		}
		tok, err := jwt.ParseDecoratedJWT(data)
		if err != nil {
			return u
		}
		if claims, err := jwt.DecodeUserClaims(tok); err == nil {
			u.JWTSub, u.JWTName = claims.Subject, claims.Name
			u.Account = claims.IssuerAccount
			if u.Account == "" {
				u.Account = claims.Issuer
			}
		}
		return u
	case o.NKey != "":
		u := NATSUser{Kind: "nkey"}
		data, err := os.ReadFile(o.NKey)
		if err != nil {
			return u
		}
		kp, err := nkeys.ParseDecoratedNKey(data)
		if err != nil {
			return u
		}
		defer kp.Wipe()
		if pub, err := kp.PublicKey(); err == nil {
			u.NKey = pub
		}
		return u
	case o.Token != "":
		return NATSUser{Kind: "token"}
	}
	return NATSUser{Kind: "none"}
}
