package jsutil_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestKVRefusedEndsAtOnce (issue 27: a refused KV read waited out
// --timeout): every call of a bucket that OpenKV or OpenExistingKV opened
// ends as soon as the server refuses its request, with a permission error
// naming the refused subject, well before the timeout.
func TestKVRefusedEndsAtOnce(t *testing.T) {
	const b = "REFUSED"
	for _, tc := range []struct {
		name, deny, refused string
		call                func(ctx context.Context, kv jetstream.KeyValue) error
	}{
		{"get", "$JS.API.DIRECT.GET.KV_REFUSED.>", "$JS.API.DIRECT.GET.KV_REFUSED.$KV.REFUSED.k", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := kv.Get(ctx, "k")
			return err
		}},
		{"put", "$KV.REFUSED.>", "$KV.REFUSED.k", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := kv.Put(ctx, "k", []byte("v"))
			return err
		}},
		{"create", "$KV.REFUSED.>", "$KV.REFUSED.k", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := kv.Create(ctx, "k", []byte("v"))
			return err
		}},
		{"update", "$KV.REFUSED.>", "$KV.REFUSED.k", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := kv.Update(ctx, "k", []byte("v"), 1)
			return err
		}},
		{"delete", "$KV.REFUSED.>", "$KV.REFUSED.k", func(ctx context.Context, kv jetstream.KeyValue) error {
			return kv.Delete(ctx, "k")
		}},
		{"watch", "$JS.API.CONSUMER.CREATE.KV_REFUSED.>", "$JS.API.CONSUMER.CREATE.KV_REFUSED.", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := jsutil.KVKeys(ctx, kv, refusalTimeout)
			return err
		}},
		{"history", "$JS.API.CONSUMER.CREATE.KV_REFUSED.>", "$JS.API.CONSUMER.CREATE.KV_REFUSED.", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := jsutil.KVHistory(ctx, kv, refusalTimeout, "k")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, c, _ := refusedRun(t, tc.deny)
			for _, open := range []string{"OpenKV", "OpenExistingKV"} {
				var kv jetstream.KeyValue
				var err error
				if open == "OpenKV" {
					kv, err = jsutil.OpenKV(ctx, c.JS, jetstream.KeyValueConfig{Bucket: b}, true, refusalTimeout, time.Second)
				} else {
					kv, err = jsutil.OpenExistingKV(ctx, c.JS, b)
				}
				if err != nil {
					t.Fatal(err)
				}
				cctx, cancel := context.WithTimeout(ctx, refusalTimeout)
				start := time.Now()
				err = tc.call(cctx, kv)
				took := time.Since(start)
				cancel()
				if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("%s, %s: %v, want a permission error naming %s", open, tc.name, err, tc.refused)
				}
				if took >= refusalTimeout/2 {
					t.Errorf("%s, %s took %s (timeout %s): it waited for the refused request's answer", open, tc.name, took, refusalTimeout)
				}
			}
		})
	}
}

// TestKVOpenedThroughJsutil: no code but jsutil's opening functions opens
// or creates a bucket with nats.go, so every bucket jsctl reads is one
// whose refused calls end at once (TestKVRefusedEndsAtOnce).
func TestKVOpenedThroughJsutil(t *testing.T) {
	allowed := map[string]bool{filepath.Join("jsutil", "kvopen.go"): true, filepath.Join("jsutil", "kvrefused.go"): true}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if allowed[rel] || strings.HasPrefix(rel, "internal"+string(filepath.Separator)) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "KeyValue", "CreateKeyValue", "CreateOrUpdateKeyValue", "UpdateKeyValue":
						t.Errorf("%s calls %s: open buckets with jsutil.OpenKV or jsutil.OpenExistingKV (their refused calls end at once)", rel, sel.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
