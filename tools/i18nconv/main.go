// Command i18nconv turns the health package's messages into health.Text, so
// that the doctor and the node page can print them in the reader's language.
// It is the mechanical half of the translation: run it after merging a branch
// that adds or rewrites checks, then add the new formats to i18n/zh_CN.go
// (TestEveryFormatTranslated in package i18n names the missing ones).
//
//	go run ./tools/i18nconv            # rewrites health/*.go in place
//	go run ./tools/i18nconv -n         # prints what it would change
//
// The finding helpers (results.ok, warn, fail, skip) take health.Text. The
// tool type-checks the package and mends each place where a string meets a
// Text, until none is left:
//
//   - fmt.Sprintf(f, a...) becomes Textf(f, a...), a string literal
//     Textf(literal) with its % doubled, a concatenation one Textf whose format
//     is the literal parts and whose %s arguments are the others (a
//     fmt.Sprintf operand with a constant format is inlined, a constant
//     operand becomes Textf(constant), a clause of its own);
//   - a variable, parameter, struct field or function result of type string
//     that reaches a Text becomes a Text itself (what feeds it is mended in the
//     next round), and s == "" becomes s.Empty();
//   - strings.Join(parts, sep) of a local []string becomes JoinTexts with
//     parts a []Text;
//   - a Text where a string is needed gets .String() (listed: the English is
//     printed there).
//
// Then fragments: a string variable or parameter passed to Textf that is
// assigned an English phrase (a literal with a space, a Sprintf of one)
// becomes a Text, and so does a strings.Join of such phrases, so that
// conditional clauses and lists are translated with the sentence.
//
// Code already converted gives no type error, so running it again changes
// nothing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "health", "the package directory to convert")
	dry := flag.Bool("n", false, "print the rewrites, change no file")
	rounds := flag.Int("rounds", 60, "give up after this many rounds")
	flag.Parse()
	c := &converter{dir: *dir, dry: *dry}
	if err := c.run(*rounds); err != nil {
		fmt.Fprintln(os.Stderr, "i18nconv:", err)
		os.Exit(1)
	}
}

type converter struct {
	dir string
	dry bool

	fset  *token.FileSet
	files map[string]*ast.File // by file name
	src   map[string][]byte
	keep  map[string]bool
	info  *types.Info
	pkg   *types.Package
	edits map[string][]edit
	// stringified lists the places that print the English.
	stringified []string
	changed     map[string]bool
}

type edit struct {
	start, end int
	text       string
	why        string
}

func (c *converter) run(rounds int) error {
	c.changed = map[string]bool{}
	for round := 1; ; round++ {
		if round > rounds {
			return fmt.Errorf("still not converged after %d rounds", rounds)
		}
		errs, err := c.load()
		if err != nil {
			return err
		}
		c.edits = map[string][]edit{}
		if len(errs) > 0 {
			for _, e := range errs {
				c.mend(e)
			}
		} else {
			c.fragments()
		}
		if len(c.edits) == 0 {
			if len(errs) > 0 {
				for _, e := range errs {
					fmt.Fprintln(os.Stderr, e)
				}
				return fmt.Errorf("%d type errors left that it cannot mend", len(errs))
			}
			break
		}
		n, err := c.apply()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "round %d: %d type errors, %d rewrites\n", round, len(errs), n)
		if c.dry {
			break
		}
	}
	for _, s := range c.stringified {
		fmt.Fprintln(os.Stderr, "prints the English:", s)
	}
	var names []string
	for f := range c.changed {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		fmt.Println(f)
	}
	return nil
}

// load parses and type-checks the package's non-test files.
func (c *converter) load() ([]types.Error, error) {
	c.fset = token.NewFileSet()
	c.files, c.src, c.keep = map[string]*ast.File{}, map[string][]byte{}, map[string]bool{}
	names, err := filepath.Glob(filepath.Join(c.dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		// text.go is Text itself: it is left alone.
		keep := filepath.Base(name) == "text.go"
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(c.fset, name, b, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		c.files[name], c.src[name] = f, b
		if keep {
			c.keep[name] = true
		}
		files = append(files, f)
	}
	var errs []types.Error
	conf := types.Config{Importer: importer.ForCompiler(c.fset, "source", nil), Error: func(err error) {
		if te, ok := err.(types.Error); ok {
			errs = append(errs, te)
		}
	}}
	c.info = &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	c.pkg, _ = conf.Check(c.dir, c.fset, files, c.info)
	return errs, nil
}

func (c *converter) fileOf(pos token.Pos) (string, *ast.File) {
	name := c.fset.Position(pos).Filename
	return name, c.files[name]
}

func (c *converter) text(n ast.Node) string {
	name, _ := c.fileOf(n.Pos())
	return string(c.src[name][c.fset.Position(n.Pos()).Offset:c.fset.Position(n.End()).Offset])
}

func (c *converter) replace(n ast.Node, text, why string) {
	c.replaceRange(n.Pos(), n.End(), text, why)
}

func (c *converter) replaceRange(from, to token.Pos, text, why string) {
	name, _ := c.fileOf(from)
	if c.keep[name] {
		return
	}
	c.edits[name] = append(c.edits[name], edit{c.fset.Position(from).Offset, c.fset.Position(to).Offset, text, why})
}

// apply writes the edits, the first of overlapping ones only (the next round
// sees the rest again).
func (c *converter) apply() (int, error) {
	n := 0
	for name, es := range c.edits {
		sort.SliceStable(es, func(i, j int) bool { return es[i].start < es[j].start })
		src := c.src[name]
		var out bytes.Buffer
		at := 0
		for _, e := range es {
			if e.start < at {
				continue
			}
			out.Write(src[at:e.start])
			out.WriteString(e.text)
			at = e.end
			n++
			if c.dry || os.Getenv("I18NCONV_DEBUG") != "" {
				fmt.Printf("%s: %s\n\t%s\n\t→ %s\n", c.fset.Position(c.files[name].Pos()+token.Pos(e.start)), e.why, src[e.start:e.end], e.text)
			}
		}
		out.Write(src[at:])
		b, err := format.Source(out.Bytes())
		if err != nil {
			return n, fmt.Errorf("%s: the rewrite does not parse: %v", name, err)
		}
		if !c.dry {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				return n, err
			}
			c.changed[name] = true
		}
	}
	return n, nil
}

var (
	reCannotUseString = regexp.MustCompile(`^cannot use .* \((?:untyped string constant|constant .* of type string|variable of type string|value of type string|.*type string)\b.*\) as (?:health\.)?Text value`)
	reCannotUseSlice  = regexp.MustCompile(`^cannot use .* \(.*type \[\]string\) as \[\](?:health\.)?Text value`)
	reCannotUseText   = regexp.MustCompile(`^cannot use .* \(.*type (?:health\.)?Text\) as string value`)
	reMismatched      = regexp.MustCompile(`mismatched types (?:health\.)?Text and (?:untyped )?string|mismatched types (?:untyped )?string and (?:health\.)?Text`)
	reAppendTexts     = regexp.MustCompile(`^cannot use .* \(.*type \[\](?:health\.)?Text\) as \[\]string value in argument to append`)
	reInferred        = regexp.MustCompile(`type \[\]string of .* does not match inferred type \[\](?:health\.)?Text`)
	reJoinTexts       = regexp.MustCompile(`^cannot use .* \(.*type \[\](?:health\.)?Text\) as \[\]string value in argument to strings\.Join`)
	reOperatorPlus    = regexp.MustCompile(`operator \+ not defined on .*Text`)
)

// mend rewrites the code at one type error.
func (c *converter) mend(e types.Error) {
	if os.Getenv("I18NCONV_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, "type error:", e)
	}
	path := c.pathAt(e.Pos)
	if len(path) == 0 {
		return
	}
	switch {
	case reCannotUseString.MatchString(e.Msg):
		if x := outermostAt(path, e.Pos); x != nil {
			c.toText(x)
		}
	case reCannotUseSlice.MatchString(e.Msg):
		if x := outermostAt(path, e.Pos); x != nil {
			if call, ok := ast.Unparen(x).(*ast.CallExpr); ok {
				if fd := c.localFunc(call.Fun); fd != nil {
					c.retypeResult(fd, "[]string", "[]Text")
				}
				return
			}
			c.retype(x, "[]string", "[]Text")
		}
	case reCannotUseText.MatchString(e.Msg) && strings.HasSuffix(e.Msg, "in argument to append"):
		// A Text appended to a list of strings: the list holds messages.
		for i := len(path) - 1; i >= 0; i-- {
			if call, ok := path[i].(*ast.CallExpr); ok && c.text(call.Fun) == "append" && len(call.Args) > 0 {
				if !c.retype(call.Args[0], "[]string", "[]Text") {
					x := outermostAt(path, e.Pos)
					c.replace(x, c.text(x)+".String()", "a string is needed")
				}
				return
			}
		}
	case reCannotUseText.MatchString(e.Msg):
		if x := outermostAt(path, e.Pos); x != nil {
			c.replace(x, c.text(x)+".String()", "a string is needed")
			c.stringified = append(c.stringified, c.fset.Position(x.Pos()).String()+" "+c.text(x))
		}
	case strings.HasSuffix(e.Msg, "imported and not used"):
		for i := len(path) - 1; i >= 0; i-- {
			if spec, ok := path[i].(*ast.ImportSpec); ok {
				c.replace(spec, "", "an import no longer used")
				return
			}
		}
	case reAppendTexts.MatchString(e.Msg):
		for i := len(path) - 1; i >= 0; i-- {
			if call, ok := path[i].(*ast.CallExpr); ok && c.text(call.Fun) == "append" && len(call.Args) > 0 {
				first := call.Args[0]
				for {
					inner, ok := ast.Unparen(first).(*ast.CallExpr)
					if !ok || c.text(inner.Fun) != "append" || len(inner.Args) == 0 {
						break
					}
					first = inner.Args[0]
				}
				c.retype(first, "[]string", "[]Text")
				return
			}
		}
	case reInferred.MatchString(e.Msg):
		if x := outermostAt(path, e.Pos); x != nil {
			c.retype(x, "[]string", "[]Text")
		}
	case reJoinTexts.MatchString(e.Msg):
		for i := len(path) - 1; i >= 0; i-- {
			if call, ok := path[i].(*ast.CallExpr); ok && c.isPkgFunc(call, "strings", "Join") {
				c.replaceRange(call.Fun.Pos(), call.Fun.End(), "JoinTexts", "a list of messages")
				return
			}
		}
	case reMismatched.MatchString(e.Msg), reOperatorPlus.MatchString(e.Msg):
		for i := len(path) - 1; i >= 0; i-- {
			switch n := path[i].(type) {
			case *ast.BinaryExpr:
				switch n.Op {
				case token.ADD:
					top := n
					for j := i - 1; j >= 0; j-- {
						b, ok := path[j].(*ast.BinaryExpr)
						if !ok || b.Op != token.ADD {
							break
						}
						top = b
					}
					c.replace(top, c.concat(flatten(top)), "a concatenation with a Text")
					return
				case token.EQL, token.NEQ:
					if isEmptyLit(n.X) || isEmptyLit(n.Y) {
						side := n.X
						if isEmptyLit(n.X) {
							side = n.Y
						}
						not := "!"
						if n.Op == token.EQL {
							not = ""
						}
						c.replace(n, not+c.text(side)+".Empty()", "comparison with \"\"")
						return
					}
					side := n.X
					if t := c.info.TypeOf(n.Y); t != nil && strings.HasSuffix(t.String(), "Text") {
						side = n.Y
					}
					c.replace(side, c.text(side)+".String()", "compared with a string")
					c.stringified = append(c.stringified, c.fset.Position(side.Pos()).String()+" "+c.text(side)+" (compared)")
					return
				}
			case *ast.AssignStmt:
				if n.Tok == token.ADD_ASSIGN && len(n.Lhs) == 1 {
					c.replace(n, c.text(n.Lhs[0])+" = "+c.concat(append([]ast.Expr{n.Lhs[0]}, flatten(n.Rhs[0])...)), "+= on a Text")
					return
				}
			}
		}
	}
}

// pathAt is the chain of nodes enclosing pos, outermost first.
func (c *converter) pathAt(pos token.Pos) []ast.Node {
	_, f := c.fileOf(pos)
	if f == nil {
		return nil
	}
	var path []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		path = append(path, n)
		return true
	})
	return path
}

// outermostAt is the largest expression that starts at pos.
func outermostAt(path []ast.Node, pos token.Pos) ast.Expr {
	for _, n := range path {
		if x, ok := n.(ast.Expr); ok && x.Pos() == pos {
			return x
		}
	}
	return nil
}

func isEmptyLit(x ast.Expr) bool {
	l, ok := x.(*ast.BasicLit)
	return ok && (l.Value == `""` || l.Value == "``")
}

// flatten is the operands of a chain of string concatenations.
func flatten(x ast.Expr) []ast.Expr {
	x = ast.Unparen(x)
	if b, ok := x.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return append(flatten(b.X), flatten(b.Y)...)
	}
	return []ast.Expr{x}
}

// toText rewrites x, a string, into a Text.
func (c *converter) toText(x ast.Expr) {
	x = ast.Unparen(x)
	switch v := x.(type) {
	case *ast.BasicLit:
		c.replace(v, c.concat([]ast.Expr{v}), "a literal")
		return
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			c.replace(v, c.concat(flatten(v)), "a concatenation")
			return
		}
	case *ast.CallExpr:
		if c.isSprintf(v) {
			c.replaceRange(v.Fun.Pos(), v.Fun.End(), "Textf", "fmt.Sprintf")
			return
		}
		if c.isJoin(v) {
			c.replaceRange(v.Fun.Pos(), v.Fun.End(), "JoinTexts", "strings.Join")
			c.retype(v.Args[0], "[]string", "[]Text")
			return
		}
		if fn := c.localFunc(v.Fun); fn != nil {
			if c.retypeResult(fn, "string", "Text") {
				return
			}
		}
	case *ast.Ident, *ast.SelectorExpr:
		if tv, ok := c.info.Types[x]; ok && tv.Value != nil {
			c.replace(x, "Textf("+c.text(x)+")", "a constant")
			return
		}
		if c.retype(x, "string", "Text") || c.retypeFromCall(x) {
			return
		}
	}
	c.replace(x, "Textf(\"%s\", "+c.text(x)+")", "a string the tool cannot trace")
	c.stringified = append(c.stringified, c.fset.Position(x.Pos()).String()+" "+c.text(x)+" (untranslated argument)")
}

// concat is one Textf of the operands of a concatenation.
func (c *converter) concat(ops []ast.Expr) string {
	var format strings.Builder
	var args []string
	for _, op := range ops {
		op = ast.Unparen(op)
		if l, ok := op.(*ast.BasicLit); ok && l.Kind == token.STRING {
			s, err := strconv.Unquote(l.Value)
			if err == nil {
				format.WriteString(strings.ReplaceAll(s, "%", "%%"))
				continue
			}
		}
		if call, ok := op.(*ast.CallExpr); ok && c.isSprintf(call) && len(call.Args) > 0 && call.Ellipsis == token.NoPos {
			if tv := c.info.Types[call.Args[0]]; tv.Value != nil && !strings.Contains(c.constString(call.Args[0]), "%[") {
				format.WriteString(c.constString(call.Args[0]))
				for _, a := range call.Args[1:] {
					args = append(args, c.text(a))
				}
				continue
			}
		}
		format.WriteString("%s")
		if tv := c.info.Types[op]; tv.Value != nil {
			args = append(args, "Textf("+c.text(op)+")")
		} else {
			args = append(args, c.text(op))
		}
	}
	out := "Textf(" + strconv.Quote(format.String())
	for _, a := range args {
		out += ", " + a
	}
	return out + ")"
}

func (c *converter) constString(x ast.Expr) string {
	tv := c.info.Types[x]
	if tv.Value == nil {
		return ""
	}
	s, _ := strconv.Unquote(tv.Value.ExactString())
	return s
}

func (c *converter) isPkgFunc(call *ast.CallExpr, pkg, name string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	pn, ok := c.info.Uses[id].(*types.PkgName)
	return ok && pn.Imported().Path() == pkg
}

func (c *converter) isSprintf(call *ast.CallExpr) bool { return c.isPkgFunc(call, "fmt", "Sprintf") }
func (c *converter) isJoin(call *ast.CallExpr) bool {
	if !c.isPkgFunc(call, "strings", "Join") || len(call.Args) != 2 {
		return false
	}
	obj, _, _ := c.declOf(call.Args[0])
	return obj != nil
}

// localFunc is the declaration of a function or method of the package that fun
// calls.
func (c *converter) localFunc(fun ast.Expr) *ast.FuncDecl {
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return nil
	}
	obj := c.info.Uses[id]
	if obj == nil || obj.Pkg() != c.pkg {
		return nil
	}
	for _, f := range c.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && c.info.Defs[fd.Name] == obj {
				return fd
			}
		}
	}
	return nil
}

func (c *converter) retypeResult(fd *ast.FuncDecl, from, to string) bool {
	res := fd.Type.Results
	if res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 {
		return false
	}
	if t := res.List[0].Type; c.text(t) == from {
		c.replace(t, to, "a function that returns a message")
		return true
	}
	return false
}

// declOf finds where the variable, parameter or field x names is declared:
// the type expression of its declaration, or, for x := value, the value.
func (c *converter) declOf(x ast.Expr) (obj types.Object, typ, value ast.Expr) {
	obj, typ, value, _ = c.declSpec(x)
	return obj, typ, value
}

// declSpec is declOf with the declaration itself, an *ast.Field or an
// *ast.ValueSpec (nil for x := value).
func (c *converter) declSpec(x ast.Expr) (obj types.Object, typ, value ast.Expr, spec ast.Node) {
	var id *ast.Ident
	switch v := ast.Unparen(x).(type) {
	case *ast.Ident:
		id = v
	case *ast.SelectorExpr:
		id = v.Sel
	default:
		return nil, nil, nil, nil
	}
	obj = c.info.Uses[id]
	if obj == nil {
		obj = c.info.Defs[id]
	}
	if _, ok := obj.(*types.Var); !ok || obj.Pkg() != c.pkg {
		return nil, nil, nil, nil
	}
	_, f := c.fileOf(obj.Pos())
	if f == nil {
		return nil, nil, nil, nil
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		switch d := n.(type) {
		case *ast.Field: // parameter, result or struct field
			for _, name := range d.Names {
				if name.Pos() == obj.Pos() {
					typ, found, spec = d.Type, true, d
				}
			}
		case *ast.ValueSpec:
			for i, name := range d.Names {
				if name.Pos() == obj.Pos() {
					typ, found, spec = d.Type, true, d
					if d.Type == nil && len(d.Values) == len(d.Names) {
						value = d.Values[i]
					}
				}
			}
		case *ast.AssignStmt:
			if d.Tok == token.DEFINE && len(d.Lhs) == len(d.Rhs) {
				for i, l := range d.Lhs {
					if l.Pos() == obj.Pos() {
						value, found = d.Rhs[i], true
					}
				}
			}
		}
		return !found
	})
	return obj, typ, value, spec
}

// retype makes what x names of type to instead of from.
func (c *converter) retype(x ast.Expr, from, to string) bool {
	obj, typ, value, spec := c.declSpec(x)
	switch {
	case typ != nil:
		if c.text(typ) != from {
			return false
		}
		var names []*ast.Ident
		switch s := spec.(type) {
		case *ast.Field:
			names = s.Names
		case *ast.ValueSpec:
			names = s.Names
		}
		if len(names) < 2 {
			c.replace(typ, to, "a "+from+" that holds a message")
			return true
		}
		// One name of several declared together: each gets its type, in
		// their order (parameters keep their places).
		sep := ", "
		if _, ok := spec.(*ast.ValueSpec); ok {
			sep = "\nvar "
			if c.inParenDecl(spec) {
				sep = "\n"
			}
		} else if c.inStruct(spec) {
			sep = "\n"
		}
		var each []string
		for _, n := range names {
			t := from
			if n.Pos() == obj.Pos() {
				t = to
			}
			each = append(each, n.Name+" "+t)
		}
		c.replaceRange(names[0].Pos(), typ.End(), strings.Join(each, sep), "a "+from+" that holds a message, declared with others")
		return true
	case value == nil:
		return false
	case to == "Text":
		c.toText(value)
		return true
	}
	if call, ok := value.(*ast.CallExpr); ok && len(call.Args) > 0 && c.text(call.Args[0]) == from { // make([]string, …)
		c.replace(call.Args[0], to, "a slice of messages")
		return true
	}
	if cl, ok := value.(*ast.CompositeLit); ok && cl.Type != nil && c.text(cl.Type) == from {
		c.replace(cl.Type, to, "a slice of messages")
		return true
	}
	return false
}

func (c *converter) inParenDecl(spec ast.Node) bool {
	_, f := c.fileOf(spec.Pos())
	paren := false
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GenDecl); ok && g.Lparen.IsValid() && g.Pos() <= spec.Pos() && spec.End() <= g.End() {
			for _, sp := range g.Specs {
				if sp == spec {
					paren = true
				}
			}
		}
		return !paren
	})
	return paren
}

func (c *converter) inStruct(field ast.Node) bool {
	_, f := c.fileOf(field.Pos())
	in := false
	ast.Inspect(f, func(n ast.Node) bool {
		if st, ok := n.(*ast.StructType); ok {
			for _, fl := range st.Fields.List {
				if fl == field {
					in = true
				}
			}
		}
		return !in
	})
	return in
}

// retypeFromCall: x, a, err := f() with f of this package: f's result at x's
// place becomes a Text.
func (c *converter) retypeFromCall(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	obj := c.info.Uses[id]
	if obj == nil {
		return false
	}
	_, f := c.fileOf(obj.Pos())
	if f == nil {
		return false
	}
	done := false
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if done || !ok || as.Tok != token.DEFINE || len(as.Rhs) != 1 || len(as.Lhs) < 2 {
			return !done
		}
		for i, l := range as.Lhs {
			if l.Pos() != obj.Pos() {
				continue
			}
			call, ok := as.Rhs[0].(*ast.CallExpr)
			if !ok {
				return false
			}
			fd := c.localFunc(call.Fun)
			if fd == nil || fd.Type.Results == nil {
				return false
			}
			j := 0
			for _, r := range fd.Type.Results.List {
				n := max(1, len(r.Names))
				if i >= j && i < j+n && n == 1 && c.text(r.Type) == "string" {
					c.replace(r.Type, "Text", "a result that holds a message")
					done = true
				}
				j += n
			}
		}
		return !done
	})
	return done
}

// fragments finds the string variables and lists of them that a Textf prints
// and that hold nothing but English phrases, and makes them Texts.
func (c *converter) fragments() {
	for _, f := range c.files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || id.Name != "Textf" || len(call.Args) == 0 {
				return true
			}
			for _, a := range call.Args[1:] {
				c.fragment(a)
			}
			return true
		})
	}
}

func (c *converter) fragment(a ast.Expr) {
	a = ast.Unparen(a)
	switch v := a.(type) {
	case *ast.CallExpr:
		if c.isJoin(v) && c.phrasal(v.Args[0]) {
			c.replaceRange(v.Fun.Pos(), v.Fun.End(), "JoinTexts", "a list of phrases")
			c.retype(v.Args[0], "[]string", "[]Text")
		} else if c.isSprintf(v) {
			c.replaceRange(v.Fun.Pos(), v.Fun.End(), "Textf", "a clause")
		} else if fd := c.localFunc(v.Fun); fd != nil && c.returnsPhrases(fd) {
			c.retypeResult(fd, "string", "Text")
		}
	case *ast.BasicLit:
		if v.Kind == token.STRING && phrase(v) {
			c.replace(v, c.concat([]ast.Expr{v}), "a phrase")
		}
	case *ast.Ident:
		if tv := c.info.Types[v]; tv.Value != nil && strings.Contains(tv.Type.String(), "string") {
			if s := c.constString(v); reSentence.MatchString(s) {
				c.replace(v, "Textf("+v.Name+")", "a constant phrase")
			}
			return
		}
		if t := c.info.TypeOf(v); t != nil && t.String() == "string" && c.phrasal(v) {
			c.retype(v, "string", "Text")
		}
	}
}

// returnsPhrases reports whether fd returns one string, and nothing but
// English phrases ("" too).
func (c *converter) returnsPhrases(fd *ast.FuncDecl) bool {
	res := fd.Type.Results
	if fd.Body == nil || res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 || c.text(res.List[0].Type) != "string" {
		return false
	}
	phrases, others := 0, 0
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
			switch {
			case c.saysPhrase(ret.Results[0]):
				phrases++
			case !isEmptyLit(ret.Results[0]):
				others++
			}
		}
		return true
	})
	return phrases > 0 && others == 0
}

// phrasal reports whether the local variable or parameter x names is given
// nothing but English phrases (a literal with a space, a Sprintf or a
// concatenation with one, ""); for a list, whether every append to it is one.
func (c *converter) phrasal(x ast.Expr) bool {
	obj, _, _ := c.declOf(x)
	if obj == nil || obj.Parent() == c.pkg.Scope() || obj.(*types.Var).IsField() {
		return false
	}
	var values []ast.Expr
	_, f := c.fileOf(obj.Pos())
	ast.Inspect(f, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				if c.refersTo(l, obj) && i < len(s.Rhs) {
					v := s.Rhs[i]
					if call, ok := v.(*ast.CallExpr); ok && len(call.Args) > 1 && c.text(call.Fun) == "append" && c.refersTo(call.Args[0], obj) {
						values = append(values, call.Args[1:]...)
						continue
					}
					values = append(values, v)
				}
			}
		case *ast.ValueSpec:
			for i, name := range s.Names {
				if c.info.Defs[name] == obj && i < len(s.Values) {
					values = append(values, s.Values[i])
				}
			}
		case *ast.CallExpr: // a parameter: what the calls pass
			if fd := c.localFunc(s.Fun); fd != nil {
				i := 0
				for _, fld := range fd.Type.Params.List {
					for _, name := range fld.Names {
						if c.info.Defs[name] == obj && i < len(s.Args) {
							values = append(values, s.Args[i])
						}
						i++
					}
				}
			}
		}
		return true
	})
	if len(values) == 0 {
		return false
	}
	for _, v := range values {
		if !isEmptyLit(v) && !c.saysPhrase(v) {
			return false
		}
	}
	return true
}

func (c *converter) refersTo(x ast.Expr, obj types.Object) bool {
	id, ok := ast.Unparen(x).(*ast.Ident)
	return ok && (c.info.Uses[id] == obj || c.info.Defs[id] == obj)
}

// saysPhrase reports whether v is an English phrase of its own: a literal with
// a space, a Sprintf of one, a concatenation with one. What a call of another
// function makes of its arguments is its own business.
func (c *converter) saysPhrase(v ast.Expr) bool {
	for _, op := range flatten(v) {
		switch o := op.(type) {
		case *ast.BasicLit:
			if o.Kind == token.STRING && phrase(o) {
				return true
			}
		case *ast.CallExpr:
			if c.isSprintf(o) && len(o.Args) > 0 {
				if l, ok := o.Args[0].(*ast.BasicLit); ok && phrase(l) {
					return true
				}
			}
		}
	}
	return false
}

// rePhrase is an English word: lowercase, which names of states and
// devices (ACTIVE, mlx5_0) are not.
var rePhrase = regexp.MustCompile(`(?:^|[^%A-Za-z])[a-z]{3,}`)

// reSentence is English words in a row: a constant that says something,
// not a name (req_transport_retries_exceeded).
var reSentence = regexp.MustCompile(`[a-z]{2,} [a-z]{2,}`)

func phrase(l *ast.BasicLit) bool {
	s, err := strconv.Unquote(l.Value)
	return err == nil && rePhrase.MatchString(s)
}
