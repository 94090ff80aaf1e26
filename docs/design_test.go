// Package docs holds the checks that keep the docs true of the code.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/aepforms/aepforms"

// notGo are names DESIGN.md writes in backticks that are the browser's,
// not Go's: they name what static/app.js uses.
var notGo = map[string]bool{
	"EventSource":      true,
	"PushSubscription": true,
	"localStorage":     true,
	"targetOrigin":     true,
}

// decls is what the module's Go files declare.
type decls struct {
	pkgs     map[string]map[string]bool // package name -> its top-level names
	types    map[string]map[string]bool // "pkg.Type" and "Type" -> its methods and fields
	all      map[string]bool            // every top-level name, method and field
	external map[string]bool            // names of the packages imported from outside the module
}

// readDecls parses every Go file of the module (tests included: the docs
// name test support too).
func readDecls(t *testing.T, root string) decls {
	t.Helper()
	d := decls{pkgs: map[string]map[string]bool{}, types: map[string]map[string]bool{}, all: map[string]bool{}, external: map[string]bool{}}
	member := func(pkg, typ, name string) {
		for _, k := range []string{typ, pkg + "." + typ} {
			if d.types[k] == nil {
				d.types[k] = map[string]bool{}
			}
			d.types[k][name] = true
		}
		d.all[name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		if d.pkgs[pkg] == nil {
			d.pkgs[pkg] = map[string]bool{}
		}
		top := func(name string) { d.pkgs[pkg][name] = true; d.all[name] = true }
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, modulePath) {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			d.external[name] = true
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					top(decl.Name.Name)
					continue
				}
				member(pkg, receiverType(decl.Recv.List[0].Type), decl.Name.Name)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						top(spec.Name.Name)
						fieldsOf(spec.Type, func(n string) { member(pkg, spec.Name.Name, n) })
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							top(n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// fieldsOf calls add with the fields of a struct type (embedded ones by
// their type's name) and the methods of an interface type.
func fieldsOf(e ast.Expr, add func(string)) {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return
	}
	for _, f := range list.List {
		for _, n := range f.Names {
			add(n.Name)
		}
		if len(f.Names) == 0 {
			t := f.Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			switch t := t.(type) {
			case *ast.Ident:
				add(t.Name)
			case *ast.SelectorExpr:
				add(t.Sel.Name)
			}
		}
	}
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// callHead is the name a span like `Record(Submission)` or
	// `New(Options{Now, Journal})` begins with.
	callHead = regexp.MustCompile(`^(\(\*?[A-Za-z_][\w.]*\)\.[A-Za-z_]\w*|[A-Za-z_][\w.]*(?:\(\))?(?:\.[A-Za-z_]\w*)*)[({]`)
	recvForm = regexp.MustCompile(`^\(\*?(?:([A-Za-z_]\w*)\.)?([A-Za-z_]\w*)\)\.([A-Za-z_]\w*)$`)
	chain    = regexp.MustCompile(`^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$`)
	goLike   = regexp.MustCompile(`^(?:[A-Z]\w*[a-z]\w*|[a-z]+[A-Z]\w*)$`)
)

// identifiers finds the Go identifiers a Markdown text names in backticks,
// outside fenced blocks: `pkg.Name`, `(*T).M`, `Type.Member`, and a bare
// `Name` that reads as Go (exported, or camelCase: a one-word lower-case
// name like `derive` is left alone, as wire names and SQL look the same).
func identifiers(md string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			s := strings.TrimSpace(m[1])
			if h := callHead.FindStringSubmatch(s); h != nil {
				s = h[1]
			}
			s = strings.ReplaceAll(s, "()", "")
			if recvForm.MatchString(s) || chain.MatchString(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// check says why name is not in the tree, or "" when it is.
func (d decls) check(name string) string {
	if m := recvForm.FindStringSubmatch(name); m != nil {
		pkg, typ, meth := m[1], m[2], m[3]
		key := typ
		if pkg != "" {
			if d.pkgs[pkg] == nil {
				return "no package " + pkg
			}
			key = pkg + "." + typ
		}
		if !d.types[key][meth] {
			return "no method or field " + meth + " of " + key
		}
		return ""
	}
	if strings.HasSuffix(name, ".go") {
		return "" // a file (routes.go), though a package shares its stem
	}
	parts := strings.Split(name, ".")
	if len(parts) == 1 {
		if !goLike.MatchString(name) || notGo[name] || d.all[name] {
			return ""
		}
		return "declared nowhere"
	}
	head, rest := parts[0], parts[1:]
	switch {
	case d.pkgs[head] != nil:
		if !d.pkgs[head][rest[0]] {
			return "package " + head + " declares no " + rest[0]
		}
		head, rest = head+"."+rest[0], rest[1:]
	case d.external[head] || notGo[head]:
		return "" // the standard library's or a dependency's
	case !strings.ContainsAny(strings.Join(rest, ""), "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
		// A file (words.go) or an AEP type (control.accepted); a type's
		// unexported member is written (*T).m.
		return ""
	case d.types[head] == nil:
		return "no package or type " + head
	}
	for _, r := range rest {
		if ms, isType := d.types[head]; isType {
			if !ms[r] {
				return "no method or field " + r + " of " + head
			}
		} else if !d.all[r] {
			return r + " declared nowhere"
		}
		head = r
	}
	return ""
}

// TestDesignNamesExist keeps DESIGN.md true of the code's names: every Go
// identifier it names in backticks is declared in the module.
func TestDesignNamesExist(t *testing.T) {
	md, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	d := readDecls(t, "..")
	names := identifiers(string(md))
	if len(names) < 100 {
		t.Fatalf("found only %d identifiers in DESIGN.md: the reader is broken", len(names))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if why := d.check(n); why != "" {
			t.Errorf("DESIGN.md names `%s`: %s", n, why)
		}
	}
}
