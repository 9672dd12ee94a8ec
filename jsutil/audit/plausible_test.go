package audit

import (
	"strings"
	"testing"
	"time"
)

func TestImplausible(t *testing.T) {
	stored := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ahead := stored.Add(MaxSkew - time.Second)
	far := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	ok := func() *Event {
		return &Event{Time: stored.Add(-time.Millisecond), Stream: Object{Name: "S", Created: &stored}, Consumer: Object{Name: "c"},
			Before: &State{Delivered: 10, AckFloor: 10}, After: &State{Delivered: 10, AckFloor: 2}}
	}
	for _, tc := range []struct {
		name string
		edit func(e *Event)
		want string // "" : plausible
	}{
		{"as written", func(*Event) {}, ""},
		{"clock ahead within the skew", func(e *Event) { e.Time = ahead }, ""},
		{"time far ahead", func(e *Event) { e.Time = far }, "its time 9999-12-31T23:59:59Z is after"},
		{"no time", func(e *Event) { e.Time = time.Time{} }, "it has no time"},
		{"stream created later", func(e *Event) { e.Stream.Created = &far }, "the stream's creation time"},
		{"consumer created later", func(e *Event) { e.Consumer.Created = &far }, "the consumer's creation time"},
		{"huge sequence", func(e *Event) { e.After.AckFloor, e.After.Delivered = 1<<64-1, 1<<64-1 }, "beyond any stream's sequences"},
		{"ack floor above delivered", func(e *Event) { e.Before.AckFloor = 11 }, "ack floor 11 above delivered 10"},
		{"ack floor time later", func(e *Event) { e.After.AckFloorTime = &far }, "after: the ack floor's time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ok()
			tc.edit(e)
			got := strings.Join(e.Implausible(stored), "; ")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Implausible = %q, want %q", got, tc.want)
			}
		})
	}
}
