package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/render/form"
)

// uiPage is one HTML response of the UI as a browser received it.
type uiPage struct {
	url    *url.URL
	status int
	header http.Header
	body   string
	doc    *goquery.Document
}

// uiClient is a browser without script: it sends what a browser sends
// and never follows a redirect on its own, so tests see each 303.
func uiClient() *http.Client {
	return &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// getPage fetches path (relative to the UI's URL) as a page load.
func (s *stack) getPage(t *testing.T, path string) *uiPage {
	t.Helper()
	u := s.resolve(t, nil, path)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, u.String(), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/html")
	return s.do(t, req)
}

// resolve resolves ref against base (nil: the UI's URL).
func (s *stack) resolve(t *testing.T, base *url.URL, ref string) *url.URL {
	t.Helper()
	if base == nil {
		var err error
		base, err = url.Parse(s.uiURL)
		require.NoError(t, err)
	}
	r, err := url.Parse(ref)
	require.NoError(t, err, "URL %q", ref)
	return base.ResolveReference(r)
}

func (s *stack) do(t *testing.T, req *http.Request) *uiPage {
	t.Helper()
	return s.doWithin(t, req, stackWait)
}

// doWithin is do with a deadline of its own.
func (s *stack) doWithin(t *testing.T, req *http.Request, within time.Duration) *uiPage {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), within)
	defer cancel()
	if s.cookie != "" {
		req.Header.Set("Cookie", s.cookie)
	}
	resp, err := uiClient().Do(req.WithContext(ctx))
	require.NoError(t, err, "%s %s", req.Method, req.URL)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := &uiPage{url: req.URL, status: resp.StatusCode, header: resp.Header, body: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		p.doc, err = goquery.NewDocumentFromReader(strings.NewReader(p.body))
		require.NoError(t, err)
	}
	return p
}

// cardOf returns the card asked in session (its provenance names the
// session in full in its title), failing when the page has none.
func (p *uiPage) cardOf(t *testing.T, session string) *goquery.Selection {
	t.Helper()
	require.NotNil(t, p.doc, "%s is not HTML (status %d): %s", p.url, p.status, p.body)
	c := cardsIn(p.doc.Selection, session)
	require.Equal(t, 1, c.Length(), "cards for session %s on %s (status %d)", session, p.url, p.status)
	return c
}

// cardsIn selects the cards of session under sel.
func cardsIn(sel *goquery.Selection, session string) *goquery.Selection {
	return sel.Find(`[data-testid="card"]`).FilterFunction(func(_ int, c *goquery.Selection) bool {
		return c.Find(`[data-testid="prov-session"]`).AttrOr("title", "") == session
	})
}

// formControl is one form-associated element of a form, with the state a
// browser keeps for it.
type formControl struct {
	tag, typ, name, value string // value: a checkbox's or radio's value attribute ("on" by default)
	checked, disabled     bool
	multiple              bool
	options               []formOption
	label                 string // a button's text
}

type formOption struct {
	value            string
	selected, usable bool
}

// htmlForm is a <form> as a browser holds it while the operator fills it.
type htmlForm struct {
	action   string
	method   string
	page     *uiPage
	controls []*formControl
}

// formOf reads the card's answer form with its controls' initial state.
func formOf(t *testing.T, p *uiPage, card *goquery.Selection) *htmlForm {
	t.Helper()
	fs := card.Find(`form[data-testid="answer-form"]`)
	require.Equal(t, 1, fs.Length(), "answerable forms on the card, state %q", card.Find(`[data-testid="state"]`).Text())
	return readForm(p, fs)
}

// readForm reads the <form> fs with its controls' initial state.
func readForm(p *uiPage, fs *goquery.Selection) *htmlForm {
	f := &htmlForm{action: fs.AttrOr("action", ""), method: strings.ToLower(fs.AttrOr("method", "get")), page: p}
	fs.Find("input, select, textarea, button").Each(func(_ int, el *goquery.Selection) {
		c := &formControl{tag: goquery.NodeName(el), name: el.AttrOr("name", ""), disabled: isDisabled(el)}
		switch c.tag {
		case "input":
			c.typ = strings.ToLower(el.AttrOr("type", "text"))
			c.value = el.AttrOr("value", "")
			if c.typ == "checkbox" || c.typ == "radio" {
				c.value = el.AttrOr("value", "on")
				_, c.checked = el.Attr("checked")
			}
		case "button":
			c.typ = strings.ToLower(el.AttrOr("type", "submit"))
			c.value = el.AttrOr("value", "")
			c.label = strings.TrimSpace(el.Text())
		case "textarea":
			c.value = el.Text() // the parser already dropped the leading newline
		case "select":
			_, c.multiple = el.Attr("multiple")
			el.Find("option").Each(func(_ int, o *goquery.Selection) {
				_, sel := o.Attr("selected")
				_, dis := o.Attr("disabled")
				c.options = append(c.options, formOption{value: o.AttrOr("value", collapse(o.Text())), selected: sel, usable: !dis})
			})
			c.pickDefault()
		}
		f.controls = append(f.controls, c)
	})
	return f
}

// isDisabled applies HTML's rule: the disabled attribute, or a disabled
// fieldset ancestor (except inside that fieldset's first legend).
func isDisabled(el *goquery.Selection) bool {
	if _, ok := el.Attr("disabled"); ok {
		return true
	}
	dis := false
	el.ParentsFiltered("fieldset[disabled]").EachWithBreak(func(_ int, fs *goquery.Selection) bool {
		legend := fs.ChildrenFiltered("legend").First()
		if legend.HasNodes(el.Nodes[0]).Length() == 0 {
			dis = true
		}
		return !dis
	})
	return dis
}

// pickDefault applies the selectedness rule of a single <select>: with
// none selected, the first usable option is; with several, the last.
func (c *formControl) pickDefault() {
	if c.multiple {
		return
	}
	last := -1
	for i, o := range c.options {
		if o.selected {
			last = i
		}
	}
	for i := range c.options {
		c.options[i].selected = false
	}
	if last < 0 {
		for i, o := range c.options {
			if o.usable {
				last = i
				break
			}
		}
	}
	if last >= 0 {
		c.options[last].selected = true
	}
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// named returns the enabled controls named name.
func (f *htmlForm) named(t *testing.T, name string) []*formControl {
	t.Helper()
	var out []*formControl
	for _, c := range f.controls {
		if c.name == name && !c.disabled {
			out = append(out, c)
		}
	}
	require.NotEmpty(t, out, "the form has no enabled control named %q", name)
	return out
}

// fill types value into the text control (input or textarea) name, as
// the operator would: the DOM holds LF line breaks.
func (f *htmlForm) fill(t *testing.T, name, value string) *htmlForm {
	t.Helper()
	cs := f.named(t, name)
	require.Len(t, cs, 1, "controls named %q", name)
	c := cs[0]
	require.True(t, c.tag == "textarea" || c.tag == "input" && !slices.Contains([]string{"checkbox", "radio", "submit", "button", "reset", "image", "hidden", "file"}, c.typ),
		"%q is a %s %s, not a text control", name, c.tag, c.typ)
	c.value = value
	return f
}

// tick sets the checkbox or radio name=value (a radio unticks the rest of
// its group).
func (f *htmlForm) tick(t *testing.T, name, value string, on bool) *htmlForm {
	t.Helper()
	found := false
	for _, c := range f.named(t, name) {
		if c.typ != "checkbox" && c.typ != "radio" {
			continue
		}
		if c.value == value {
			c.checked, found = on, true
		} else if c.typ == "radio" && on {
			c.checked = false
		}
	}
	require.True(t, found, "no checkbox or radio %s=%s", name, value)
	return f
}

// choose selects the option value in the <select> name (a single select
// deselects the others).
func (f *htmlForm) choose(t *testing.T, name, value string) *htmlForm {
	t.Helper()
	cs := f.named(t, name)
	require.Len(t, cs, 1)
	c := cs[0]
	require.Equal(t, "select", c.tag, "%q is not a <select>", name)
	found := false
	for i := range c.options {
		if c.options[i].value == value && c.options[i].usable {
			c.options[i].selected, found = true, true
		} else if !c.multiple {
			c.options[i].selected = false
		}
	}
	require.True(t, found, "the <select> %q has no usable option %q", name, value)
	return f
}

// button returns the submit button labelled label ("" = the first one).
func (f *htmlForm) button(t *testing.T, label string) *formControl {
	t.Helper()
	for _, c := range f.controls {
		// "" is the form's send button: never the rule maker's Preview,
		// which sends nothing.
		if (c.tag == "button" || c.tag == "input") && c.typ == "submit" && !c.disabled && (label == "" && c.name != form.NameRulePreview || c.label == label) {
			return c
		}
	}
	require.FailNow(t, "no such submit button", "label %q", label)
	return nil
}

// formPair is one entry of a form's data set.
type formPair struct{ name, value string }

// entries builds the form data set as a browser does on submit, in tree
// order: named enabled controls only; checkboxes and radios when
// checked; a select's selected options; the submitter alone of the
// buttons; every line break normalised to CRLF.
func (f *htmlForm) entries(submitter *formControl) []formPair {
	var out []formPair
	add := func(n, v string) { out = append(out, formPair{crlf(n), crlf(v)}) }
	for _, c := range f.controls {
		if c.name == "" || c.disabled {
			continue
		}
		switch {
		case c.tag == "button" || c.typ == "submit" || c.typ == "image":
			if c == submitter {
				add(c.name, c.value)
			}
		case c.typ == "reset" || c.typ == "button" || c.typ == "file":
		case c.typ == "checkbox" || c.typ == "radio":
			if c.checked {
				add(c.name, c.value)
			}
		case c.tag == "select":
			for _, o := range c.options {
				if o.selected && o.usable {
					add(c.name, o.value)
				}
			}
		default:
			add(c.name, c.value)
		}
	}
	return out
}

// crlf normalises line breaks to CRLF, as form submission does.
func crlf(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "\r\n")
}

func encodePairs(ps []formPair) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.value))
	}
	return b.String()
}

// submit posts the form as a browser does when submitter is clicked
// (nil: the operator pressed Enter, and no named button is sent): to the
// form's action, urlencoded, with an Origin header (origin "" = the UI's
// own) and the page as Referer.
func (s *stack) submit(t *testing.T, f *htmlForm, submitter *formControl, origin string) *uiPage {
	t.Helper()
	require.Equal(t, "post", f.method, "the answer form's method")
	if origin == "" {
		origin = s.origin
	}
	u := s.resolve(t, f.page.url, f.action)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, u.String(), strings.NewReader(encodePairs(f.entries(submitter))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Referer", f.page.url.String())
	req.Header.Set("Accept", "text/html")
	return s.do(t, req)
}

// follow asserts a post/redirect/get answer and loads its target.
func (s *stack) follow(t *testing.T, p *uiPage) *uiPage {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, p.status, "answer post status; body: %s", p.body)
	loc := p.header.Get("Location")
	require.NotEmpty(t, loc, "303 without a Location")
	u := s.resolve(t, p.url, loc)
	require.Equal(t, s.origin, u.Scheme+"://"+u.Host, "redirect leaves the UI: %s", loc)
	u.Fragment = ""
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, u.String(), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/html")
	got := s.do(t, req)
	require.Equal(t, http.StatusOK, got.status, "GET %s after the redirect", u)
	return got
}
