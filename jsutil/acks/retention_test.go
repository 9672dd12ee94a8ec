package acks_test

import (
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// Stats and RangeRecords report the retention the records carry: a later
// run with another retention that writes no record (it only moves its
// floor, which then says that run's retention) does not change it.
func TestStatsRetentionOfRecords(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	ctx := testCtx(t, 60*time.Second)
	publish(t, js, "orders", 1, 3)
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	const month = 30 * 24 * time.Hour
	long, err := acks.Open(ctx, js, acks.WithRetention(month))
	if err != nil {
		t.Fatal(err)
	}
	tl := newTally()
	if sum := consumeAll(t, long, cons, tl, 3, tl.handler(nil)); sum.Processed != 3 {
		t.Fatalf("%+v", sum)
	}
	def, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := def.Consume(ctx, cons, tl.handler(nil), acks.WithIdle(200*time.Millisecond)); err != nil || sum.Handled() != 0 {
		t.Fatalf("second run: %+v %v", sum, err)
	}
	floor, err := def.ReadFloor(ctx, acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"})
	if err != nil || floor.Retention != acks.DefaultRetention {
		t.Fatalf("the second run's floor: %+v %v", floor, err)
	}
	st, err := def.Stats(ctx, "ORDERS.c")
	if err != nil || st.RetentionNS != int64(month) || st.RetentionFrom != "records" || st.RetentionMinNS != int64(month) || st.RetentionMaxNS != int64(month) {
		t.Fatalf("stats: retention %v from %s, range %v to %v (%v); want %v", time.Duration(st.RetentionNS), st.RetentionFrom,
			time.Duration(st.RetentionMinNS), time.Duration(st.RetentionMaxNS), err, month)
	}
	if info, err := def.RangeRecords(ctx, "ORDERS.c", 1, 3); err != nil || info.Records != 3 || info.Retention != month || !info.RetentionKnown {
		t.Fatalf("RangeRecords: %+v %v", info, err)
	}
}
