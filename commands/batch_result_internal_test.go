package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/jsutil/acks"
)

func TestParseResultLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want resultLine
		// bad: the reason of a protocol error; badSeq the seq it names
		bad    string
		badSeq uint64
	}{
		{line: `{"seq":7,"ok":true}`, want: resultLine{Seq: 7, OK: true}},
		{line: `  {"seq":7,"ok":false,"error":"x"} ` + "\r", want: resultLine{Seq: 7, Error: "x"}},
		{line: `{"ok":false,"seq":18446744073709551615}`, want: resultLine{Seq: 18446744073709551615}},
		{line: `{"seq":7,"ok":false,"error":{"code":23505}}`, want: resultLine{Seq: 7, Error: `{"code":23505}`}},
		{line: `{"seq":7,"ok":false,"error": { "code" : 23505, "d":[1, 2] }}`, want: resultLine{Seq: 7, Error: `{"code":23505,"d":[1,2]}`}},
		{line: `{"seq":7,"ok":false,"error":42}`, want: resultLine{Seq: 7, Error: `42`}},
		{line: `{"seq":7,"ok":false,"error":null}`, want: resultLine{Seq: 7}},
		{line: `{"seq":7,"ok":true,"error":null}`, want: resultLine{Seq: 7, OK: true}},
		{line: `{"seq":7,"ok":true,"error":""}`, want: resultLine{Seq: 7, OK: true}},
		{line: `{"seq":7,"ok":true,"key":"a","took_ms":3}`, want: resultLine{Seq: 7, OK: true}},
		{line: `{"seq":7,"ok":"false"}`, bad: `"ok" must be true or false, got "false"`, badSeq: 7},
		{line: `{"seq":7,"ok":0}`, bad: `"ok" must be true or false, got 0`, badSeq: 7},
		{line: `{"seq":7,"ok":null}`, bad: `"ok" must be true or false, got null`, badSeq: 7},
		{line: `{"seq":7.0,"ok":false}`, bad: `"seq" must be a positive integer, got 7.0`},
		{line: `{"seq":"7","ok":false}`, bad: `"seq" must be a positive integer, got "7"`},
		{line: `{"seq":7e0,"ok":false}`, bad: `"seq" must be a positive integer, got 7e0`},
		{line: `{"seq":-7,"ok":false}`, bad: `"seq" must be a positive integer, got -7`},
		{line: `{"seq":0,"ok":false}`, bad: `"seq" must be a positive integer, got 0`},
		{line: `{"seq":18446744073709551616,"ok":false}`, bad: `"seq" must be a positive integer, got 18446744073709551616`},
		{line: `{"seq":7,"ok":false,"error":"x"} trailing`, bad: `text after the JSON object`, badSeq: 7},
		{line: `{"seq":7,"ok":true}{"seq":8,"ok":true}`, bad: `text after the JSON object`, badSeq: 7},
		{line: `{"seq":7,"ok":true,"error":"db down"}`, bad: `"ok" is true but "error" is set`, badSeq: 7},
		{line: `{"seq":7,"ok":true,"ok":false}`, bad: `"ok" is given twice`, badSeq: 7},
		{line: `{"seq":7,"seq":8,"ok":true}`, bad: `"seq" is given twice`},
		{line: `{"seq":7,"ok":false,"error":"a","error":"b"}`, bad: `"error" is given twice`, badSeq: 7},
		{line: `{"ok":true}`, bad: `no "seq"`},
		{line: `{"Seq":7,"ok":true}`, bad: `"Seq" is not a member of a result line (did you mean "seq"?)`},
		{line: `{"seq":7,"ok":true,"OK":false}`, bad: `"OK" is not a member of a result line (did you mean "ok"?)`, badSeq: 7},
		{line: `{"seq":7,"ok":true,"Error":"x"}`, bad: `"Error" is not a member of a result line (did you mean "error"?)`, badSeq: 7},
		{line: `{"\u0073eq":7,"ok":true}`, want: resultLine{Seq: 7, OK: true}},
		{line: `{"seq":7}`, bad: `no "ok"`, badSeq: 7},
		{line: `{"level":"info","msg":"loaded"}`, bad: `no "seq"`},
		{line: `{"seq":7,"ok":tru}`, bad: `not valid JSON: invalid character '}' in literal true (expecting 'e')`, badSeq: 7},
		{line: `{"seq":7,"ok":true`, bad: `not valid JSON: unexpected end of the line`, badSeq: 7},
		{line: `{"seq":7,"ok":true,}`, bad: `not valid JSON: invalid character '}' looking for beginning of object key string`, badSeq: 7},
		{line: `{`, bad: `not valid JSON: unexpected end of the line`},
	} {
		got, err := parseResultLine([]byte(tc.line))
		if tc.bad == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseResultLine(%s) = %+v, %v; want %+v", tc.line, got, err, tc.want)
			}
			continue
		}
		var se *resultSyntaxError
		if !errors.As(err, &se) || se.Reason != tc.bad || se.Seq != tc.badSeq {
			t.Errorf("parseResultLine(%s) = %+v, %#v; want protocol error %q naming seq %d", tc.line, got, se, tc.bad, tc.badSeq)
		}
	}
}

// batchOf is a batch of deliveries with these sequences.
func batchOf(seqs ...uint64) []acks.Delivery {
	ds := make([]acks.Delivery, len(seqs))
	for i, s := range seqs {
		ds[i].Seq = s
	}
	return ds
}

// outcomes reads a command's stdout for the batch of messages 1 to 4 and
// returns each message's outcome ("done" or the error), the output passed
// on and what was reported.
func outcomes(t *testing.T, stdout string) (got []string, output string) {
	t.Helper()
	ds := batchOf(1, 2, 3, 4)
	var out bytes.Buffer
	res := newBatchResults(ds, &out)
	readBatchOutput(strings.NewReader(stdout), &out, res)
	errs := res.errors(ds)
	if errs == nil {
		return nil, out.String()
	}
	for _, err := range errs {
		if err == nil {
			got = append(got, "done")
		} else {
			got = append(got, err.Error())
		}
	}
	return got, out.String()
}

func TestBatchResultsMapping(t *testing.T) {
	each := func(format string) string {
		var b strings.Builder
		for seq := 1; seq <= 4; seq++ {
			fmt.Fprintf(&b, format+"\n", seq)
		}
		return b.String()
	}
	long := strings.Repeat("x", 1_200_000)
	for _, tc := range []struct {
		name, stdout string
		want         []string // nil: no result line, the exit status decides
		output       string   // a regexp-free substring of what reaches stderr
	}{
		{name: "no result lines", stdout: "hello\n\nbye", want: nil, output: "hello\n\nbye\n"},
		{name: "all ok", stdout: each(`{"seq":%d,"ok":true}`), want: []string{"done", "done", "done", "done"}},
		{
			// Finding 9: before, a byte-order mark made the failure an
			// output line and the message was recorded done.
			name:   "a byte-order mark and other Unicode spaces before {",
			stdout: "\uFEFF" + `{"seq":1,"ok":false,"error":"db down"}` + "\n\u00A0" + `{"seq":2,"ok":false}` + "\n\u200B\u3000" + `{"seq":3,"ok":false}` + "\n\uFEFF \t" + `{"seq":4,"ok":false}` + "\n",
			want:   []string{"command reported: db down", "command reported: failed", "command reported: failed", "command reported: failed"},
		},
		{
			name:   "a long output line, then failures",
			stdout: long + "\n" + each(`{"seq":%d,"ok":false}`),
			want:   []string{"command reported: failed", "command reported: failed", "command reported: failed", "command reported: failed"},
			output: long + "\n",
		},
		{
			name:   "structured errors",
			stdout: each(`{"seq":%d,"ok":false,"error":{"code":23505}}`),
			want:   []string{`command reported: {"code":23505}`, `command reported: {"code":23505}`, `command reported: {"code":23505}`, `command reported: {"code":23505}`},
		},
		{
			name:   "ok as a string",
			stdout: `{"seq":1,"ok":true}` + "\n" + `{"seq":2,"ok":"false"}` + "\n",
			want: []string{"done",
				`result protocol error on line 2 of the command's output: not a well-formed result line: "ok" must be true or false, got "false": {"seq":2,"ok":"false"}`,
				"the command printed no result line for message 3", "the command printed no result line for message 4"},
			output: `jsctl: result protocol error on line 2 of the command's output: not a well-formed result line: "ok" must be true or false, got "false": {"seq":2,"ok":"false"} (message 2 fails)` + "\n",
		},
		{
			name:   "seq unreadable",
			stdout: `{"seq":1,"ok":true}` + "\n" + `{"seq":2.0,"ok":false}` + "\n" + `{"seq":3,"ok":false}` + "\n",
			want: []string{"done",
				`result protocol error on line 2 of the command's output: not a well-formed result line: "seq" must be a positive integer, got 2.0: {"seq":2.0,"ok":false}`,
				"command reported: failed",
				`result protocol error on line 2 of the command's output: not a well-formed result line: "seq" must be a positive integer, got 2.0: {"seq":2.0,"ok":false}`},
			output: `(every message of the batch without a valid result fails)`,
		},
		{
			name:   "a JSON log line",
			stdout: `{"level":"info"}` + "\n",
			want: []string{
				`result protocol error on line 1 of the command's output: not a well-formed result line: no "seq": {"level":"info"}`,
				`result protocol error on line 1 of the command's output: not a well-formed result line: no "seq": {"level":"info"}`,
				`result protocol error on line 1 of the command's output: not a well-formed result line: no "seq": {"level":"info"}`,
				`result protocol error on line 1 of the command's output: not a well-formed result line: no "seq": {"level":"info"}`},
		},
		{
			name:   "reported twice",
			stdout: each(`{"seq":%d,"ok":false}`) + `{"seq":2,"ok":true}` + "\n" + `{"seq":3,"ok":false}` + "\n",
			want: []string{"command reported: failed",
				`result protocol error on line 5 of the command's output: message 2 reported again (first on line 2): {"seq":2,"ok":true}`,
				`result protocol error on line 6 of the command's output: message 3 reported again (first on line 3): {"seq":3,"ok":false}`,
				"command reported: failed"},
		},
		{
			name:   "ok twice",
			stdout: `{"seq":1,"ok":true}` + "\n" + `{"seq":1,"ok":true}` + "\n" + each(`{"seq":%d,"ok":true}`)[len(`{"seq":1,"ok":true}`)+1:],
			want:   []string{`result protocol error on line 2 of the command's output: message 1 reported again (first on line 1): {"seq":1,"ok":true}`, "done", "done", "done"},
		},
		{
			name:   "not in the batch",
			stdout: `{"seq":9,"ok":true}` + "\n" + `{"seq":1,"ok":true}`,
			want:   []string{"done", "the command printed no result line for message 2", "the command printed no result line for message 3", "the command printed no result line for message 4"},
			output: "jsctl: warning: line 1 of the batch command's output reports message 9, which is not in the batch: ignored\n",
		},
		{
			name:   "a result line over the limit",
			stdout: `{"seq":1,"ok":false,"error":"` + strings.Repeat("y", maxResultLine) + `"}` + "\n" + `{"seq":2,"ok":true}` + "\n",
			want: []string{
				`result protocol error on line 1 of the command's output: a result line of 1048607 bytes, over the limit of 1048576: {"seq":1,"ok":false,"error":"` + strings.Repeat("y", resultQuote-len(`{"seq":1,"ok":false,"error":"`)) + "…",
				"done",
				`result protocol error on line 1 of the command's output: a result line of 1048607 bytes, over the limit of 1048576: {"seq":1,"ok":false,"error":"` + strings.Repeat("y", resultQuote-len(`{"seq":1,"ok":false,"error":"`)) + "…",
				`result protocol error on line 1 of the command's output: a result line of 1048607 bytes, over the limit of 1048576: {"seq":1,"ok":false,"error":"` + strings.Repeat("y", resultQuote-len(`{"seq":1,"ok":false,"error":"`)) + "…",
			},
		},
		{
			name:   "a result line at the limit",
			stdout: `{"seq":1,"ok":false,"error":"` + strings.Repeat("y", maxResultLine-len(`{"seq":1,"ok":false,"error":""}`)) + `"}`,
			want:   []string{"command reported: " + strings.Repeat("y", maxResultError) + "…", "the command printed no result line for message 2", "the command printed no result line for message 3", "the command printed no result line for message 4"},
		},
		{
			name:   "bytes that are not UTF-8 are quoted escaped",
			stdout: "{\"seq\":1,\"ok\":\xff}\n",
			want: []string{
				`result protocol error on line 1 of the command's output: not a well-formed result line: not valid JSON: invalid character 'ÿ' looking for beginning of value: {"seq":1,"ok":\xff}`,
				"the command printed no result line for message 2", "the command printed no result line for message 3", "the command printed no result line for message 4",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, output := outcomes(t, tc.stdout)
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("outcomes:\n got %q\nwant %q", cut(got), cut(tc.want))
			}
			if !strings.Contains(output, tc.output) {
				t.Errorf("output %q does not contain %q", cutS(output), cutS(tc.output))
			}
		})
	}
}

func cut(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, cutS(s))
	}
	return out
}

func cutS(s string) string {
	if len(s) > 400 {
		return s[:400] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// FuzzResultLine checks the parser against encoding/json: a line it takes
// is one valid JSON object with an integer seq, a boolean ok and nothing
// after it, read as encoding/json reads it.
func FuzzResultLine(f *testing.F) {
	for _, s := range []string{
		`{"seq":1,"ok":true}`,
		`{"seq":1,"ok":false}`,
		`{"seq":1,"ok":false,"error":"x"}`,
		`{"seq":1,"ok":false,"error":{"code":23505}}`,
		`{"seq":1,"ok":"false"}`,
		`{"seq":1,"ok":0}`,
		`{"seq":1.0,"ok":false}`,
		`{"seq":1,"ok":false,"error":"x"} trailing`,
		`{"seq":1,"ok":true,"ok":false}`,
		`{"seq":1,"ok":true,"error":"x"}`,
		`{"seq":"1","ok":true}`,
		`{"seq":1,"ok":true,"OK":false}`,
		`{"level":"info"}`,
		`log line`,
		` {"seq":3,"ok":true}` + "\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseResultLine(line)
		if err != nil {
			var se *resultSyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("took %q, which is not valid JSON", line)
		}
		var std struct {
			Seq json.Number     `json:"seq"`
			OK  *bool           `json:"ok"`
			Err json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatalf("took %q, which encoding/json refuses: %v", line, err)
		}
		if std.Seq.String() != fmt.Sprint(r.Seq) || r.Seq == 0 || std.OK == nil || *std.OK != r.OK {
			t.Fatalf("took %q as %+v; encoding/json reads seq %q ok %v", line, r, std.Seq, std.OK)
		}
		if r.OK && r.Error != "" {
			t.Fatalf("took %q as ok with an error", line)
		}
	})
}

// FuzzBatchOutput checks the reader: every line whose first non-blank
// byte is not "{" reaches the output unchanged (with its "\n"), and every
// other line is a result line.
func FuzzBatchOutput(f *testing.F) {
	f.Add([]byte("log\n{\"seq\":1,\"ok\":true}\n\n  {\"seq\":2,\"ok\":0}\nend"))
	f.Add([]byte(strings.Repeat("z", 70_000) + "\n{\"seq\":1,\"ok\":false}\n"))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		var out, report bytes.Buffer
		ds := batchOf(1, 2)
		res := newBatchResults(ds, &report)
		readBatchOutput(bytes.NewReader(stdout), &out, res)
		var want bytes.Buffer
		results := 0
		lines := bytes.SplitAfter(stdout, []byte("\n"))
		for _, l := range lines {
			if len(l) == 0 {
				continue
			}
			if t := bytes.TrimLeft(l, " \t\r\n"); len(t) > 0 && t[0] == '{' {
				results++
				continue
			}
			want.Write(l)
			if l[len(l)-1] != '\n' {
				want.WriteByte('\n')
			}
		}
		if !bytes.Equal(out.Bytes(), want.Bytes()) {
			t.Fatalf("output %q, want %q", out.Bytes(), want.Bytes())
		}
		if res.lines != results {
			t.Fatalf("%d result lines, want %d", res.lines, results)
		}
		if errs := res.errors(ds); (errs == nil) != (results == 0) {
			t.Fatalf("errors %v with %d result lines", errs, results)
		}
	})
}
