package acks

import "github.com/nats-io/nats.go"

// SetDoneSend makes Consume send its done writes with send (tests hold
// them back to see what waits for their confirmation).
func SetDoneSend(st *Store, send func(*nats.Msg) error) { st.sendDone = send }
