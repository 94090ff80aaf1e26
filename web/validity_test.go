package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

// TestMarkupIsValidHTML runs every page and panel (cards of every kind and
// state, refused posts, sign-in) through the Nu Html Checker, errors only,
// and the pushed card fragments inside a minimal document.
func TestMarkupIsValidHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts the Nu Html Checker")
	}
	browsertest.VNU(t) // skip before building the pages when the checker is missing
	var docs []browsertest.Document
	for _, p := range markupPages(t) {
		var r response
		if p.post != nil {
			r = p.h.postForm(p.c, p.path, p.post)
			require.GreaterOrEqual(t, r.StatusCode, 400, "%s: the post should be refused", p.name)
		} else {
			r = p.h.getPage(p.c, p.path)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", p.name)
		}
		docs = append(docs, browsertest.Document{Name: p.name, HTML: r.body})
	}
	// The fragments the push stream sends are inserted into the page's
	// body: each must be valid there on its own.
	h := newHarness(t)
	f := seedEveryKind(h)
	for _, id := range []string{string(f.Form), string(f.Permission), string(f.Answered), string(f.Malformed), string(f.Rejected)} {
		r := h.getPage(nil, "cards/"+url.PathEscape(id))
		require.Equal(t, http.StatusOK, r.StatusCode)
		docs = append(docs, browsertest.Fragment("card fragment "+id, r.body))
	}
	browsertest.ValidateHTML(t, docs...)
}
