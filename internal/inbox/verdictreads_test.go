package inbox_test

import (
	"go/ast"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// cardWhat are the members of inbox.Card that say what a request is, not
// where it stands: code outside the inbox may read them. Every other
// member (State, Recorded, ExpiresAt, Capture, Malformed, OverBudget,
// Informational, Routes, Submission, Responders, Peer, Open, CanAnswer,
// ..., and any member added later) is the card's state: read only
// through its verdict ((*inbox.Card).Verdict), which decides it once.
var cardWhat = map[string]string{
	"ID": "identity", "Key": "identity", "EventID": "identity", "Version": "identity",
	"Agent": "who asks", "Run": "who asks", "Tool": "what it asks about", "Severity": "how urgent the agent says it is",
	"AskedAt": "when it was asked", "ReceivedAt": "when it was asked",
	"Request": "what it asks", "Shape": "what it asks", "Controls": "what it asks (how many controls)",
	"Verdict": "the decision itself",
	"Posted":  "whether a form token is the latest post's (one command per token), not a state",
}

// No code outside internal/inbox decides anything from a card's state:
// every read of an inbox.Card member that is not in cardWhat, in the
// module's non-test code (files neither _test.go nor importing testing),
// is a failure, with its place.
func TestCardStateIsReadOnlyThroughTheVerdict(t *testing.T) {
	t.Parallel()
	cfg := &packages.Config{Dir: "../..", Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
		packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module did not load")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	walked := 0
	for _, p := range pkgs {
		if p.PkgPath == inboxPath {
			continue
		}
		for _, f := range p.Syntax {
			name := p.Fset.Position(f.Pos()).Filename
			if strings.HasSuffix(name, "_test.go") || imports(f, "testing") {
				continue
			}
			walked++
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || !onCard(p.TypesInfo.Selections[sel]) {
					return true
				}
				if _, ok := cardWhat[sel.Sel.Name]; !ok {
					pos := p.Fset.Position(sel.Sel.Pos())
					rel, _ := filepath.Rel(root, pos.Filename)
					bad = append(bad, rel+":"+strconv.Itoa(pos.Line)+": Card."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	if walked < 100 {
		t.Fatalf("walked %d files: the module was not found", walked)
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Errorf("%s read outside the verdict: take it from (*inbox.Card).Verdict", b)
	}
}

const inboxPath = "github.com/aepforms/aepforms/internal/inbox"

// onCard reports whether s selects a member of inbox.Card, on a Card, a
// *Card or a struct that embeds one.
func onCard(s *types.Selection) bool {
	if s == nil {
		return false
	}
	t := deref(s.Recv())
	path := s.Index()
	for _, i := range path[:len(path)-1] { // down the embedded fields to the member's holder
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			return false
		}
		t = deref(st.Field(i).Type())
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Card" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == inboxPath
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

func imports(f *ast.File, path string) bool {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			return true
		}
	}
	return false
}
