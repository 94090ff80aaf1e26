package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Rules page is one link away from the inbox and the batch page, as
// it is from History (a newcomer found it only through History or a
// card's rule part).
func TestRulesAreLinkedFromEveryPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.ask("s1", "r1", permissionReq())
	h.ask("s1", "r2", permissionReq())
	for _, path := range []string{"", "history", "batches", "rules"} {
		r := h.getPage(nil, path)
		require.Equal(t, http.StatusOK, r.StatusCode, "/%s", path)
		link := r.doc(t).Find(`header nav [data-testid="rules-link"]`)
		require.Equal(t, 1, link.Length(), "/%s: the header links to Rules", path)
		assert.Equal(t, "/rules", link.AttrOr("href", ""), "/%s", path)
	}
}
