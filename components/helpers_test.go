package components

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/static"
)

// update rewrites the golden HTML files: go test ./components -update
var update = flag.Bool("update", false, "rewrite the golden HTML files in testdata/")

// renderHTML renders c and returns its HTML.
func renderHTML(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(context.Background(), &buf))
	return buf.String()
}

// parse renders c and parses it as a document.
func parse(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(renderHTML(t, c)))
	require.NoError(t, err)
	return doc
}

// cardDoc renders one card with opts.
func cardDoc(t *testing.T, c inbox.Card, opts view.Options) *goquery.Document {
	t.Helper()
	return parse(t, CardFragment(view.Card(c, opts)))
}

// answerable are options under which a card can be answered.
func answerable() view.Options {
	return view.Options{BasePath: "/forms/", Now: sampleNow, Token: "tok-1"}
}

// sample returns the sample card with id.
func sample(t *testing.T, id string) inbox.Card {
	t.Helper()
	for _, c := range sampleCards() {
		if string(c.ID) == id {
			return c
		}
	}
	t.Fatalf("no sample card %q", id)
	return inbox.Card{}
}

// attr returns an attribute, failing when it is absent.
func attr(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	v, ok := s.Attr(name)
	require.True(t, ok, "attribute %s missing on <%s id=%q>", name, goquery.NodeName(s), s.AttrOr("id", ""))
	return v
}

// has reports whether s has attribute name.
func has(s *goquery.Selection, name string) bool {
	_, ok := s.Attr(name)
	return ok
}

// assertDescribedBy checks every id in aria-describedby names an element.
func assertDescribedBy(t *testing.T, doc *goquery.Document) {
	t.Helper()
	doc.Find("[aria-describedby]").Each(func(_ int, s *goquery.Selection) {
		for _, id := range strings.Fields(s.AttrOr("aria-describedby", "")) {
			assert.Equal(t, 1, doc.Find("#"+id).Length(), "aria-describedby %q on %s names one element", id, s.AttrOr("id", goquery.NodeName(s)))
		}
	})
}

// assetHash matches the cache-busting hash of the static files, which
// golden files leave out so a CSS or JS edit does not change them.
var assetHash = regexp.MustCompile(`\?v=[0-9a-f]{12}`)

// golden compares html with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, html string) {
	t.Helper()
	html = assetHash.ReplaceAllString(html, "?v=HASH")
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(html), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./components -update")
	assert.Equal(t, string(want), html, "%s differs: review the change, then go test ./components -update", path)
}

// sampleAssets are the asset URLs web links under /forms/, with the real
// content hash (the golden pages replace it with HASH).
func sampleAssets() view.Assets {
	h := static.Hash()
	return view.Assets{
		CSS:  "/forms/static/app.css?v=" + h,
		JS:   "/forms/static/app.js?v=" + h,
		Icon: "/forms/static/icon.svg?v=" + h,
	}
}
