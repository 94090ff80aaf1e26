package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of internal/app or web may be,
// counted from its signature to its closing brace.
const maxFuncLines = 80

// TestNoLongFunctions keeps internal/app and web readable: no hand-written
// function (tests and generated code aside) is over maxFuncLines lines.
func TestNoLongFunctions(t *testing.T) {
	for _, dir := range []string{".", "../../web"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if ast.IsGenerated(f) {
				continue
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if lines <= maxFuncLines {
					continue
				}
				name := f.Name.Name + "." + funcName(fd)
				t.Errorf("%s (%s) is %d lines, over %d: split it into named steps", name, fset.Position(fd.Pos()), lines, maxFuncLines)
			}
		}
	}
}

// funcName is a function's name, a method's as (*T).M or (T).M.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	switch t := fd.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return "(*" + id.Name + ")." + fd.Name.Name
		}
	case *ast.Ident:
		return "(" + t.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}
