package i18n

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// format is one Textf format of the health package and where it is.
type format struct {
	text string
	at   string
}

// healthFormats reads every Textf format from the health package's source:
// a string literal, a constant of the package, or a concatenation of them.
// A Textf whose format is none of these fails the test, since its
// translation could not be checked.
func healthFormats(t *testing.T) []format {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("../health/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The constants of the package and of its functions, by name (the
	// package's names do not clash).
	consts := map[string]ast.Expr{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							consts[n.Name] = vs.Values[i]
						}
					}
				}
			}
			return true
		})
	}
	var value func(ast.Expr) (string, bool)
	value = func(x ast.Expr) (string, bool) {
		switch v := ast.Unparen(x).(type) {
		case *ast.BasicLit:
			if v.Kind == token.STRING {
				s, err := strconv.Unquote(v.Value)
				return s, err == nil
			}
		case *ast.Ident:
			if c, ok := consts[v.Name]; ok {
				return value(c)
			}
		case *ast.BinaryExpr:
			if v.Op == token.ADD {
				a, ok1 := value(v.X)
				b, ok2 := value(v.Y)
				return a + b, ok1 && ok2
			}
		}
		return "", false
	}
	var out []format
	for _, f := range files {
		if strings.HasSuffix(fset.Position(f.Pos()).Filename, "text.go") {
			continue // Text itself
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "Textf" || len(call.Args) == 0 {
				return true
			}
			at := fset.Position(call.Pos()).String()
			s, ok := value(call.Args[0])
			if !ok {
				t.Errorf("%s: Textf's format is not a constant, so its translation cannot be checked", at)
				return true
			}
			out = append(out, format{s, at})
			return true
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].text < out[j].text })
	return out
}
