package commands

import (
	"bytes"
	"testing"
)

// TestTableLayout checks the table layout commands print (it was
// tablewriter's borderless one): cells trimmed and escaped, columns padded
// to the widest cell in terminal columns (a CJK character takes two, "…"
// one), one space either side, nothing at the end of a line, and short
// rows padded.
func TestTableLayout(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{W: &b}
	err := p.Table([]string{"SEQ", "SUBJECT", "PREVIEW"}, [][]string{
		{"1", "orders.eu", ""},
		{"12345", "  a b  ", "日本語"},
		{"", "x\ty", "é…"},
		{"7"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := " SEQ    SUBJECT    PREVIEW\n" +
		" 1      orders.eu\n" +
		" 12345  a b        日本語\n" +
		"        x\\ty       é…\n" +
		" 7\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}
