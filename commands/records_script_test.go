package commands_test

import "github.com/rogpeppe/go-internal/testscript"

// cmdKVRm deletes a KV bucket (to make an ack bucket again):
//
//	kv-rm BUCKET
func cmdKVRm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: kv-rm BUCKET")
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	ts.Check(js.DeleteKeyValue(ctx, args[0]))
}
