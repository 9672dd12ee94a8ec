package acks

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// The hand-written encoding of records is what json.Marshal makes of them,
// byte for byte: empty fields left out, strings escaped alike (quotes,
// control characters, HTML characters, invalid UTF-8, U+2028).
func TestValueEncodeIsJSON(t *testing.T) {
	strs := []string{"", "a", "host:123", `q"uote`, `back\slash`, "<&>", "tab\tnl\n", "\x00\x1f\x7f", "é ü", "\xff\xfe", "\u2028\u2029", "json:order.id + header:Nats-Msg-Id"}
	nums := []uint64{0, 1, 42, math.MaxUint64}
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string { return strs[r.IntN(len(strs))] }
	num := func() uint64 { return nums[r.IntN(len(nums))] }
	for i := 0; i < 2000; i++ {
		v := value{
			State: State(str()), Seq: num(), Hash: str(), Worker: str(), Fence: num(), Deliveries: num(),
			Expires: int64(num() >> 1), Key: str(), Reason: str(), Failures: num(), Final: r.IntN(2) == 0, Spec: str(),
			Retention: -int64(num() >> 2), DLSubject: str(), DLID: str(), DLStream: str(), DLSeq: num(),
		}
		if i%3 == 0 {
			v = value{State: StateDone, Seq: num()}
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.encode(); string(got) != string(want) {
			t.Fatalf("encode(%+v)\n got %s\nwant %s", v, got, want)
		}
	}
}
