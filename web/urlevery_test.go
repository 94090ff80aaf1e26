package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The page's script rewrites the page's address at most as often as the
// server says (--url-every): the page carries it as data-url-every.
func TestPageCarriesItsURLRewriteInterval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(c *Config) { c.URLEvery = 600 * time.Millisecond }))
	h.ask("s1", "r1", nameForm())
	for _, path := range []string{"", "panel"} {
		d := h.getPage(nil, path).doc(t)
		assert.Equal(t, "600", d.Find("body").AttrOr("data-url-every", ""), "%q: the interval as configured", path)
	}
}
