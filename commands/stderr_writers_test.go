package commands_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOutputOnlyThroughEnv: jsctl writes its standard streams only through
// Env.Stdout and Env.Stderr (which --log-format json turns into one JSON
// object per line and which mask credentials), so no code of the CLI or
// the library may write to them another way: os.Stdout and os.Stderr
// (except where Main hands them to Run), the log package's and log/slog's
// default loggers, the print builtins, fmt.Print*, progressbar's defaults
// (stdout), or a NATS connection made outside jsutil.Connect (nats.go's
// default error handler prints to os.Stderr). A new command cannot get
// around it: every non-test file is read.
func TestOutputOnlyThroughEnv(t *testing.T) {
	forbidden := map[string]map[string]bool{
		"os":                                   {"Stdout": true, "Stderr": true},
		"log":                                  set("Print", "Printf", "Println", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln", "Output", "Default", "Writer", "SetOutput"),
		"log/slog":                             set("Debug", "Info", "Warn", "Error", "Log", "LogAttrs", "DebugContext", "InfoContext", "WarnContext", "ErrorContext", "Default", "SetDefault"),
		"fmt":                                  set("Print", "Printf", "Println"),
		"github.com/schollz/progressbar/v3":    set("Default", "DefaultBytes", "DefaultSilent", "DefaultBytesSilent"),
		"github.com/nats-io/nats.go":           set("Connect"),
		"github.com/nats-io/nats.go/jetstream": set(),
	}
	allowed := map[string]bool{
		"commands/main.go os.Stdout":        true, // Main hands the process's streams to Run
		"commands/main.go os.Stderr":        true,
		"jsutil/connect.go nats.go.Connect": true, // the one connection, with its error handler
	}
	files := 0
	for _, dir := range []string{"commands", "jsutil", "cmd", "internal/picker"} {
		root := filepath.Join("..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			rel = filepath.ToSlash(rel)
			imports := map[string]string{} // local name -> import path
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				name := p[strings.LastIndex(p, "/")+1:]
				if strings.HasPrefix(name, "v") && strings.Count(p, "/") > 1 { // .../progressbar/v3
					q := p[:strings.LastIndex(p, "/")]
					name = q[strings.LastIndex(q, "/")+1:]
				}
				if p == "github.com/nats-io/nats.go" {
					name = "nats"
				}
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = p
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					x, ok := n.X.(*ast.Ident)
					if !ok || x.Obj != nil {
						return true
					}
					p, ok := imports[x.Name]
					if !ok || !forbidden[p][n.Sel.Name] {
						return true
					}
					key := rel + " " + p[strings.LastIndex(p, "/")+1:] + "." + n.Sel.Name
					if !allowed[key] {
						t.Errorf("%s: %s.%s writes around Env.Stdout/Env.Stderr (--log-format, masking): use env.Stderr, env.Logger() or jsutil.Connect", fset.Position(n.Pos()), x.Name, n.Sel.Name)
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Obj == nil && (id.Name == "print" || id.Name == "println") {
						t.Errorf("%s: %s writes to stderr around Env.Stderr", fset.Position(n.Pos()), id.Name)
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
	if files < 100 {
		t.Fatalf("read %d files: the walk missed the source", files)
	}
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}
