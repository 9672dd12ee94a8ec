package jsutil

import "testing"

func TestMajorMinor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [2]int
		ok   bool
	}{
		{"2.10.27", [2]int{2, 10}, true},
		{"v2.14.0-RC.1", [2]int{2, 14}, true},
		{"2.11", [2]int{2, 11}, true},
		{"2.15-preview", [2]int{2, 15}, true},
		{"", [2]int{}, false},
		{"2", [2]int{}, false},
		{"x.y.z", [2]int{}, false},
	} {
		got, ok := majorMinor(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("majorMinor(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
