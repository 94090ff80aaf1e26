// Package render is where inbox cards become HTML and form posts become
// answers. Its two subjects are its sub-packages: view (the view models the
// templ components render) and form (the form's wire contract, its field
// views and the parsing of a post into answer.values). Package render
// itself does the rendering step: components into a buffer first (so a
// template error never yields half a page), and the render-once fragment
// cache the push stream reads.
package render

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// cardBytes is about how much HTML one card renders to: buffers are sized
// up front from it instead of growing.
const cardBytes = 4 << 10

// rowBytes is about how much HTML one row (a request past the page's full
// cards) renders to.
const rowBytes = 1 << 10

// fragmentCacheSize bounds the rendered fragments kept, and
// fragmentCacheBytes their bytes (a card may render to hundreds of KiB:
// a prompt up to its budget, up to MaxControls controls); past either the
// cache starts over (a burst of changes renders each card once again). A
// fragment larger than the byte bound alone is not kept.
const (
	fragmentCacheSize  = 4096
	fragmentCacheBytes = 32 << 20
)

// Buffer renders c into a buffer of about sizeHint bytes.
func Buffer(ctx context.Context, c templ.Component, sizeHint int) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint)
	if err := c.Render(ctx, &buf); err != nil {
		return nil, err
	}
	return &buf, nil
}

// Page renders the inbox page, or the panel (the inbox without chrome).
func Page(ctx context.Context, v view.PageView) (*bytes.Buffer, error) {
	n, rows := len(v.Settled), 0
	for _, g := range v.Groups {
		n += len(g.Cards)
		rows += len(g.Rows)
	}
	c := components.Page(v)
	if v.Panel {
		c = components.Panel(v)
	}
	return Buffer(ctx, c, 16<<10+n*cardBytes+rows*rowBytes)
}

// History renders the history page (GET /history).
func History(ctx context.Context, v view.HistoryView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.History(v), 8<<10+len(v.Rows)*cardBytes/2)
}

// SignIn renders the sign-in page.
func SignIn(ctx context.Context, v view.SignInView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.SignIn(v), 8<<10)
}

// SignInPopup renders the window the panel's frame opens to sign in,
// whose form posts the panel's hand-off to action.
func SignInPopup(ctx context.Context, v view.SignInView, action string) (*bytes.Buffer, error) {
	return Buffer(ctx, components.SignInPopup(v, action), 4<<10)
}

// SignInPopupDone renders the sign-in window once the provider signed
// operator in, in role, for the panel that opened it.
func SignInPopupDone(ctx context.Context, v view.PageView, operator, role string) (*bytes.Buffer, error) {
	return Buffer(ctx, components.SignInPopupDone(v, operator, role), 4<<10)
}

// Gone renders the page a post to a question the inbox no longer holds
// is answered with.
func Gone(ctx context.Context, v view.GoneView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.Gone(v), 4<<10)
}

// SignInNotKept renders the page a console's frame shows when the browser
// refused the session cookie just set: open here (the page) in its own tab,
// or sign in again.
func SignInNotKept(ctx context.Context, v view.PageView, here, again string) (*bytes.Buffer, error) {
	return Buffer(ctx, components.SignInNotKept(v, here, again), 4<<10)
}

// Status renders the status fragment (banners, relay state, the count
// of what rules answered) the push stream sends, for the panel when
// panel; it needs no card.
func Status(ctx context.Context, v view.PageView, panel bool) (string, error) {
	buf, err := Buffer(ctx, components.StatusPush(v, panel), 1<<10)
	if err != nil {
		return "", err
	}
	return buf.String(), nil
}

// CardOnce renders one card's fragment without the cache: a refused
// post's card, with the operator's input and problems (opts.Input,
// opts.Problems) and its own token (opts.Token).
func CardOnce(ctx context.Context, c inbox.Card, opts view.Options) (string, error) {
	buf, err := Buffer(ctx, components.CardFragment(view.Card(c, opts)), 2*cardBytes)
	if err != nil {
		return "", err
	}
	return buf.String(), nil
}

// NewToken mints a form token: 128 random bits, base64url.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Fragments renders each card version once for every browser on the push
// stream, instead of once per browser. A fragment is rendered with a
// per-process random placeholder in place of the form token, and every
// copy handed out gets a fresh token swapped in: tokens stay one per
// delivered form (two tabs never share one), and agent text cannot forge
// the placeholder, which it never sees. Relative times are kept to the
// minute they were rendered in. Its methods are safe for concurrent use.
type Fragments struct {
	placeholder string
	mu          sync.Mutex
	m           map[fragmentKey]string
	bytes       int // of the fragments in m
	maxBytes    int // fragmentCacheBytes
	maxEntries  int // fragmentCacheSize
}

type fragmentKey struct {
	card    inbox.CardID
	version uint64
	minute  int64
	// operator is who the card is drawn for: an answer they gave reads
	// "by you".
	operator string
	// reach is the card's agent's reach at render time: its provenance
	// and an owed answer's line say it.
	reach inbox.Reach
	// rules is the rules' version: the rule that answered the card, or
	// was made from it, is named as it then was.
	rules uint64
	// viewer and makesRules are what the operator's role allows: no form
	// for a viewer, no rule maker but for an admin.
	viewer     inbox.Viewer
	makesRules bool
}

// NewFragments returns an empty fragment cache.
func NewFragments() *Fragments {
	// The token alphabet (base64url) never holds '.', so the placeholder
	// cannot be mistaken for a real token either.
	return &Fragments{placeholder: "tok." + NewToken(), m: make(map[fragmentKey]string),
		maxBytes: fragmentCacheBytes, maxEntries: fragmentCacheSize}
}

// keep caches one rendered fragment within the bounds.
func (f *Fragments) keep(key fragmentKey, html string) {
	if len(html) > f.maxBytes {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.m[key]; ok {
		f.bytes -= len(old)
	}
	if len(f.m) >= f.maxEntries || f.bytes+len(html) > f.maxBytes {
		clear(f.m)
		f.bytes = 0
	}
	f.m[key] = html
	f.bytes += len(html)
}

// Card returns the fragment of c (a components.CardFragment) for one
// browser, with its own form token; opts.Token is ignored. Fragments of
// one card version rendered in the same minute of opts.Now for the same
// operator, reach and rules version are one render.
func (f *Fragments) Card(ctx context.Context, c inbox.Card, opts view.Options) (string, error) {
	html, placeholder, err := f.Template(ctx, c, opts)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(html, placeholder, NewToken()), nil
}

// Template returns the shared render of c's fragment (see Card) with the
// placeholder standing where each copy's form token goes: a caller that
// hands the same fragment to many browsers prepares it once and swaps a
// fresh NewToken in for every placeholder of each copy.
func (f *Fragments) Template(ctx context.Context, c inbox.Card, opts view.Options) (html, placeholder string, err error) {
	key := fragmentKey{card: c.ID, version: c.Version, minute: opts.Now.Truncate(time.Minute).Unix(), operator: opts.Operator, reach: opts.Reachable,
		rules: opts.RulesVersion, viewer: opts.Viewer, makesRules: opts.Rules}
	f.mu.Lock()
	html, ok := f.m[key]
	f.mu.Unlock()
	if !ok {
		opts.Token = f.placeholder
		buf, err := Buffer(ctx, components.CardFragment(view.Card(c, opts)), 2*cardBytes)
		if err != nil {
			return "", "", err
		}
		html = buf.String()
		f.keep(key, html)
	}
	return html, f.placeholder, nil
}

// Row renders one waiting request as a row of a page of many.
func Row(ctx context.Context, v view.RowView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.RowFragment(v), 1<<10)
}

// Batches renders the page of batch answers.
func Batches(ctx context.Context, v view.BatchesView) (*bytes.Buffer, error) {
	n := 0
	for _, g := range v.Groups {
		n += len(g.Items)
	}
	return Buffer(ctx, components.Batches(v), 8<<10+n*512)
}

// BatchResult renders the page a batch post is answered with; outcomes
// alone renders only its outcome list (the page script's fetch).
func BatchResult(ctx context.Context, v view.BatchResultView, outcomes bool) (*bytes.Buffer, error) {
	if outcomes {
		return Buffer(ctx, components.BatchOutcomes(v), 1<<10+len(v.Outcomes)*256)
	}
	return Buffer(ctx, components.BatchResult(v), 4<<10+len(v.Outcomes)*256)
}

// BatchConfirm renders the confirmation of an "Answer all" post.
func BatchConfirm(ctx context.Context, v view.BatchConfirmView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.BatchConfirm(v), 4<<10+len(v.Hidden)*128+len(v.Questions)*1<<10)
}

// Rules renders the Rules page (GET /rules).
func Rules(ctx context.Context, v view.RulesView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.Rules(v), 8<<10+len(v.Rows)*2<<10)
}

// Routes renders the Routes page (GET /routes).
func Routes(ctx context.Context, v view.RoutesView) (*bytes.Buffer, error) {
	return Buffer(ctx, components.Routes(v), 4<<10+(len(v.Teams)+len(v.Routes))*256)
}
