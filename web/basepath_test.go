package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// urlAttrs are the attributes that hold a URL the browser will use.
var urlAttrs = []string{"href", "src", "action", "formaction", "data-push", "poster", "srcset", "data-src"}

// pageURLs returns every URL attribute value in d (fragments excepted).
func pageURLs(d *goquery.Selection) []string {
	var out []string
	d.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range urlAttrs {
			v, ok := s.Attr(a)
			if !ok || strings.HasPrefix(v, "#") || (v == "" && strings.HasPrefix(a, "data-")) {
				continue // a fragment, or a page without a stream (data-push="")
			}
			out = append(out, v)
		}
	})
	return out
}

func TestBasePathIsHonouredByEveryURL(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	f := seedEveryKind(h)
	c := h.client()
	h.signIn(c, "alice")

	refused := h.postForm(c, "cards/"+string(f.Form)+"/answer", url.Values{"token": {"t"}, "f0": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, refused.StatusCode)
	pages := map[string]*goquery.Document{
		"page":          h.getPage(c, "").doc(t),
		"panel":         h.getPage(c, "panel?agent=deployer&theme=dark").doc(t),
		"refused post":  refused.doc(t),
		"sign-in":       h.getPage(nil, "signin").doc(t),
		"card fragment": h.getPage(c, "cards/"+string(f.Form)).doc(t),
	}
	fetched := map[string]bool{}
	signOut, signOutOthers := false, false
	for name, d := range pages {
		urls := pageURLs(d.Selection)
		require.NotEmpty(t, urls, "%s has no URL at all", name)
		for _, raw := range urls {
			u, err := url.Parse(raw)
			require.NoError(t, err, "%s: %q", name, raw)
			assert.Empty(t, u.Scheme, "%s: %q is absolute; every URL stays on the UI's origin", name, raw)
			assert.True(t, strings.HasPrefix(u.Path, "/forms/"), "%s: %q is outside the base path /forms/", name, raw)
			if fetched[u.Path] || strings.HasSuffix(u.Path, "/answer") || strings.HasSuffix(u.Path, "/claim") || strings.HasSuffix(u.Path, "/assign") || u.Path == "/forms/signin" {
				continue
			}
			if u.Path == "/forms/signout" {
				// A POST form (signing out is a state change): post it last.
				signOut = true
				continue
			}
			if u.Path == "/forms/signout/others" {
				signOutOthers = true // the same form's other button: posted below
				continue
			}
			fetched[u.Path] = true
			// Every link, asset and stream named works under the prefix.
			hdr := []string{"Accept", "text/html"}
			if strings.HasSuffix(u.Path, "/push") {
				ps := h.openPush(strings.TrimPrefix(raw, "/forms/push"), "Cookie", cookieHeader(c, h.base()))
				assert.Equal(t, "status", ps.next().Event, "%s: the stream at %q", name, raw)
				continue
			}
			r := h.do(c, h.request(http.MethodGet, h.srv.URL+raw, nil, hdr...))
			assert.Equal(t, http.StatusOK, r.StatusCode, "%s: GET %q: got %d, want 200", name, raw, r.StatusCode)
		}
	}
	assert.Equal(t, "/forms", attr(pages["page"].Find("body"), "data-base"), "the script's base")
	assert.True(t, fetched["/forms/static/app.css"] && fetched["/forms/static/app.js"], "the assets were among the URLs: %v", fetched)
	assert.True(t, fetched["/forms/push"], "the push URL was among the URLs: %v", fetched)

	// The pushed fragment honours it too.
	ps := h.openPush("", "Cookie", cookieHeader(c, h.base()))
	require.Equal(t, "status", ps.next().Event)
	h.ask("s_new", "r_new", nameForm())
	for _, raw := range pageURLs(cardMsg(t, ps.next())) {
		assert.True(t, strings.HasPrefix(raw, "/forms/"), "pushed card: %q is outside the base path", raw)
	}

	assert.True(t, signOutOthers, "the signed-in page offers a sign-out of the other sessions")
	others := h.postForm(c, "signout/others", nil)
	require.Equal(t, http.StatusSeeOther, others.StatusCode, "POST /forms/signout/others works under the prefix")
	assert.Equal(t, "/forms/", others.Header.Get("Location"))
	assert.True(t, signOut, "the signed-in page offers sign-out")
	r := h.postForm(c, "signout", nil)
	assert.Equal(t, http.StatusSeeOther, r.StatusCode, "POST /forms/signout works under the prefix")
}

// cookieHeader is the Cookie header c would send to rawURL.
func cookieHeader(c *http.Client, rawURL string) string {
	u, _ := url.Parse(rawURL)
	var parts []string
	for _, ck := range c.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; ")
}

func TestBasePathRoutesAndRedirects(t *testing.T) {
	t.Parallel()
	for _, bp := range []string{"/forms/", "/forms", "forms", "/team/forms/"} {
		t.Run(bp, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BasePath = bp }))
			prefix := "/" + strings.Trim(bp, "/")
			c := h.client()

			r := h.do(nil, h.request(http.MethodGet, h.srv.URL+prefix, nil))
			assert.Equal(t, http.StatusMovedPermanently, r.StatusCode, "%s: got %d, want 301", prefix, r.StatusCode)
			assert.Equal(t, prefix+"/", r.Header.Get("Location"))

			for _, outside := range []string{"/", "/signin", "/healthz", prefix + "x/", "/static/app.css"} {
				r := h.do(nil, h.request(http.MethodGet, h.srv.URL+outside, nil))
				assert.Equal(t, http.StatusNotFound, r.StatusCode, "%s is outside the base path: got %d, want 404", outside, r.StatusCode)
			}

			page := h.getPage(c, "")
			require.Equal(t, http.StatusSeeOther, page.StatusCode)
			assert.Equal(t, prefix+"/signin", page.Header.Get("Location"), "signed out: to sign-in under the base path")
			ck := h.signIn(c, "alice")
			assert.Equal(t, prefix+"/", ck.Path, "the session cookie is scoped to the base path")

			id := h.ask("s1", "r1", nameForm())
			action, token := answerForm(t, h.getPage(c, "").doc(t), id)
			assert.Equal(t, prefix+"/cards/"+string(id)+"/answer", action)
			ans := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"x"}})
			require.Equal(t, http.StatusSeeOther, ans.StatusCode)
			assert.Equal(t, prefix+"/#"+domID(id), ans.Header.Get("Location"))

			for _, p := range []string{"healthz", "readyz", "metrics", "static/app.js", "panel", "cards/" + string(id)} {
				r := h.do(c, h.request(http.MethodGet, h.url(p), nil))
				assert.Equal(t, http.StatusOK, r.StatusCode, "%s/%s: got %d", prefix, p, r.StatusCode)
			}
			out := h.postForm(c, "signout", nil)
			assert.Equal(t, prefix+"/signin", out.Header.Get("Location"))
		})
	}
}

// A card's post URLs (answer, claim, assign) fetched with GET (a reload of
// a post's result page, a pasted link) lead to the card, never a bare 405.
func TestCardPostURLsReloadToTheCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	f := seedEveryKind(h)
	c := h.client()
	h.signIn(c, "alice")
	for _, what := range []string{"answer", "claim", "assign"} {
		r := h.getPage(c, "cards/"+string(f.Form)+"/"+what)
		assert.Equal(t, http.StatusSeeOther, r.StatusCode, "GET %s", what)
		assert.Equal(t, "/forms/#"+domID(f.Form), r.Header.Get("Location"), "GET %s", what)
	}
}
