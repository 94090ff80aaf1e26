package view

import (
	"cmp"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// Page sizes (web.Config.PageCards and friends default to these).
const (
	// DefaultPageCards is how many waiting requests a page renders in
	// full: the most urgent ones.
	DefaultPageCards = 50
	// DefaultPageRows bounds the one-line rows of a page; the rest are on
	// the next pages.
	DefaultPageRows = 500
	// DefaultPageSettled is how many settled cards the inbox shows (the
	// latest; History holds the rest).
	DefaultPageSettled = 20
	// facetTerms bounds the agents (and kinds) a page counts by name.
	facetTerms = 20
)

// WindowOptions say which part of the inbox a page shows.
type WindowOptions struct {
	// After is the keyset cursor: the sort key of the last request of the
	// previous page ("" = the first page). Pages are stable while
	// requests arrive: a new one lands before or after the cursor, never
	// shifts what the next page starts with.
	After string
	// Cards, Rows and Settled are the page sizes (Default* when 0).
	Cards, Rows, Settled int
	// Now decides which requests are still open (the pending count).
	Now time.Time
	// Viewer is who the page is for: its requests' verdicts' input.
	Viewer inbox.Viewer
}

// Window is which requests one page shows, chosen from the inbox's heads
// (inbox.Heads: cards without their request bodies) so that a page of
// ten thousand waiting requests copies and renders only what it shows.
type Window struct {
	// Full are the waiting requests rendered in full (most urgent first),
	// Settled the settled ones shown (newest first): the caller reads
	// these cards whole and hands them to Page.
	Full, Settled []inbox.CardID

	rows    []inbox.Card // heads shown as rows, most urgent first
	opts    WindowOptions
	pending int // open requests the filter matches, on every page
	waiting int // requests not settled the filter matches, on every page
	onPage  int // open requests on this page (full and rows)
	next    string
	// prev is the previous page's cursor ("" for the first page) and
	// prevLast its last waiting request, on a page after the first.
	prev     string
	prevLast inbox.CardID
	groups   map[string]int // group id -> requests waiting in it, on every page
	agents   []FacetTerm
	kinds    []FacetTerm
	windowed bool
	// settledMore: more requests are settled than the page shows.
	settledMore bool
}

// ChooseWindow picks a page's requests from heads (in inbox order: open by
// urgency, then settled newest first).
func ChooseWindow(heads []inbox.Card, o WindowOptions) Window {
	o.Cards = cmp.Or(o.Cards, DefaultPageCards)
	o.Rows = cmp.Or(o.Rows, DefaultPageRows)
	o.Settled = cmp.Or(o.Settled, DefaultPageSettled)
	w := Window{opts: o, groups: map[string]int{}}
	var open, before []keyed
	agents, kinds := map[string]int{}, map[string]int{}
	for i := range heads {
		c := &heads[i]
		vd := c.Verdict(o.Now, o.Viewer)
		if vd.Settled {
			if o.After == "" && len(w.Settled) < o.Settled {
				w.Settled = append(w.Settled, c.ID)
			} else if o.After == "" {
				w.settledMore = true
			}
			continue
		}
		w.waiting++
		if vd.Pending {
			w.pending++
		}
		g, _ := groupOf(*c)
		w.groups[g]++
		agents[c.Agent]++
		kinds[c.Request.Kind]++
		if k := sortKey(*c, vd); o.After == "" || k > o.After {
			open = append(open, keyed{k, c, vd.Pending})
		} else {
			before = append(before, keyed{k, c, vd.Pending})
		}
	}
	w.prevPage(before)
	slices.SortFunc(open, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	full := o.Cards
	if o.After != "" {
		full = 0 // later pages continue the list as rows
	}
	for i, k := range open {
		if i >= full+o.Rows {
			w.next = open[i-1].key
			break
		}
		if k.pending {
			w.onPage++
		}
		if i < full {
			w.Full = append(w.Full, k.c.ID)
		} else {
			w.rows = append(w.rows, *k.c)
		}
	}
	w.windowed = o.After != "" || w.waiting > o.Cards
	w.agents = facet(agents)
	w.kinds = facet(kinds)
	return w
}

// prevPage sets the previous page of a page after the first, from the
// waiting requests before its cursor: the first page when they fit on
// it, else the page of the last o.Rows of them (a page after the first
// is rows only).
func (w *Window) prevPage(before []keyed) {
	if len(before) == 0 {
		return
	}
	slices.SortFunc(before, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	n := len(before)
	w.prevLast = before[n-1].c.ID
	if n > w.opts.Cards+w.opts.Rows {
		w.prev = before[n-w.opts.Rows-1].key
	}
}

// keyed is a waiting request with its sort key, as a page is chosen.
type keyed struct {
	key     string
	c       *inbox.Card
	pending bool
}

// SortKey is a request's place among the waiting ones (ascending = more
// urgent), vd its verdict: the key rows, cards and page cursors are
// ordered by.
func SortKey(c inbox.Card, vd inbox.Verdict) string { return sortKey(c, vd) }

// facet is the largest counts, largest first (ties by name), at most facetTerms.
func facet(m map[string]int) []FacetTerm {
	out := make([]FacetTerm, 0, len(m))
	for v, n := range m {
		out = append(out, FacetTerm{Value: v, N: n})
	}
	slices.SortFunc(out, func(a, b FacetTerm) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	if len(out) > facetTerms {
		out = out[:facetTerms]
	}
	return out
}

// RowView is a waiting request shown as one line: the first line of its
// question, when it was asked and its deadline. It opens in place as its
// card (the script fetches FragmentURL) or, without the script, links to
// the card's own page (CardURL).
type RowView struct {
	ID, DOMID   string
	Version     uint64
	Open        bool
	Pending     bool // inbox.Verdict.Pending: data-pending, what the script counts
	Kind, Title string
	Gist        string
	Group       string
	GroupLabel  string
	SortKey     string
	AskedISO    string
	AskedRel    string
	AskedTitle  string
	Deadline    *Countdown
	CardURL     string // {base}/cards/{id}/page
	FragmentURL string // {base}/cards/{id}
	OpenText    string // the link's accessible name
	session     string
}

// Row builds the row of a request (a head is enough) at opts.Now.
func Row(c inbox.Card, opts Options) RowView {
	base := root(opts.BasePath)
	id := string(c.ID)
	vd := c.Verdict(opts.Now, opts.Viewer)
	p := provenance(c, vd, Options{Now: opts.Now})
	v := RowView{
		ID:          id,
		DOMID:       "card-" + id,
		Version:     c.Version,
		Open:        vd.Open,
		Pending:     vd.Pending,
		Kind:        c.Request.Kind,
		Title:       kindTitle(c.Request.Kind),
		Gist:        gist(c.Request.Prompt, opts.Prompts),
		SortKey:     sortKey(c, vd),
		AskedISO:    p.AskedISO,
		AskedRel:    p.AskedRel,
		AskedTitle:  p.AskedTitle,
		Deadline:    p.Deadline,
		CardURL:     base + "/cards/" + url.PathEscape(id) + "/page",
		FragmentURL: base + "/cards/" + url.PathEscape(id),
		OpenText:    words.page["open-row"],
	}
	switch {
	case vd.Placeholder:
		v.Gist = "labels withheld at capture " + vd.Capture.String()
	case v.Gist == "":
		v.Gist = words.page["no-prompt"]
	}
	v.session = c.Key.Session
	v.Group, v.GroupLabel = groupOf(c)
	// As a card's: bidi controls shown as markers, then Text over every string.
	v.Gist, v.GroupLabel = Marked(v.Gist), Marked(v.GroupLabel)
	scrub(reflect.ValueOf(&v).Elem())
	return v
}

// Facet is one way of counting the waiting requests (by agent, by kind),
// each term linking to the page filtered by it.
type Facet struct {
	Name  string
	Key   string // the query parameter: agent, kind
	Terms []FacetTerm
}

// FacetTerm is one value counted: "claude-code" 5 000.
type FacetTerm struct {
	Value string
	N     int
	Count string // N as shown
	URL   string // the page filtered by it
	Label string // Value as shown ("unnamed agent" for "")
}

// Pager is a windowed page's navigation and the line saying what it shows.
type Pager struct {
	Text string
	// Template is Text with {shown} and {total} in place of its counts
	// (data-template): the page's script writes them again as the push
	// changes what the page shows and what waits in all.
	Template  string
	NextURL   string // "" on the last page
	NextText  string
	FirstURL  string // "" on the first page
	FirstText string
	// Until is the sort key of the last request on the page when more
	// follow ("" on the last page): a pushed request past it belongs to a
	// later page, and the script leaves it there.
	Until string
	// After is the page's cursor ("" on the first page): a pushed request
	// at or before it belongs to an earlier page.
	After string
	// OffPage is how many open requests are on other pages, for the
	// script's pending count (it counts the ones on the page itself).
	OffPage int
	// PrevLast is, on a page after the first, the previous page at its
	// last waiting request (its address and #card-id): where k goes
	// from this page's first ("" on the first page, or none before).
	PrevLast string
}

// windowPage puts w's rows, counts and navigation into v (Page).
func windowPage(v *PageView, w *Window, opts PageOptions) {
	v.Pending = w.pending
	v.PageCards = w.opts.Cards
	if w.settledMore {
		v.SettledMore = words.page["settled-more"]
	}
	if w.opts.After != "" {
		v.PageCards = 0
	}
	if !w.windowed {
		return
	}
	base := v.HomeURL
	if opts.Panel {
		base = v.PanelURL
	}
	filter := url.Values{}
	for _, t := range v.Filter {
		filter.Set(t.Name, t.Value)
	}
	link := func(set ...string) string {
		q := url.Values{}
		for k, vs := range filter {
			q[k] = vs
		}
		for i := 0; i+1 < len(set); i += 2 {
			q.Set(set[i], set[i+1])
		}
		if len(q) == 0 {
			return base
		}
		return base + "?" + q.Encode()
	}
	byGroup := map[string]int{}
	for i, g := range v.Groups {
		byGroup[g.ID] = i
	}
	for _, c := range w.rows {
		r := Row(c, Options{BasePath: opts.BasePath, Now: opts.Now, Prompts: opts.Prompts})
		gi, ok := byGroup[r.Group]
		if !ok {
			gi = len(v.Groups)
			byGroup[r.Group] = gi
			v.Groups = append(v.Groups, GroupView{ID: r.Group, Label: r.GroupLabel})
		}
		v.Groups[gi].Rows = append(v.Groups[gi].Rows, r)
	}
	for i := range v.Groups {
		g := &v.Groups[i]
		g.Count = formatCount(uint64(w.groups[g.ID]))
		g.CountText = strings.Replace(words.page["group-count"], "%s", g.Count, 1)
		if s := groupSession(g); s != "" && opts.Filter.Session == "" {
			g.CountURL = link("session", s)
		}
	}
	sortGroups(v.Groups)
	// The pager counts what the header counts (the verdict's pending:
	// an informational card is shown, never counted), so the two agree.
	shown := w.onPage
	p := &Pager{Until: w.next, After: w.opts.After, OffPage: w.pending - w.onPage, FirstText: words.page["first-page"]}
	format, full := words.page["window"], formatCount(uint64(len(w.Full)))
	if w.opts.After != "" {
		format, full = words.page["window-later"], ""
		p.FirstURL = link()
		if w.prevLast != "" {
			prev := link()
			if w.prev != "" {
				prev = link("after", w.prev)
			}
			p.PrevLast = prev + "#card-" + string(w.prevLast)
		}
	}
	p.Text = sprintf3(format, formatCount(uint64(shown)), formatCount(uint64(w.pending)), full)
	p.Template = sprintf3(format, "{shown}", "{total}", full)
	if w.next != "" {
		p.NextURL = link("after", w.next)
		p.NextText = strings.Replace(words.page["next-page"], "%s", formatCount(uint64(w.opts.Rows)), 1)
	}
	v.Pager = p
	// The push stream leaves out updates of waiting requests that belong
	// to other pages (the script would only drop them): a roster change
	// that republishes ten thousand cards reaches each browser as the few
	// on its page.
	if p.Until != "" {
		v.PushURL += "&until=" + url.QueryEscape(p.Until)
	}
	if p.After != "" {
		v.PushURL += "&after=" + url.QueryEscape(p.After)
	}
	if opts.Filter.Agent == "" {
		v.Facets = append(v.Facets, facetOf(words.page["by-agent"], "agent", w.agents, link))
	}
	if opts.Filter.Kind == "" {
		v.Facets = append(v.Facets, facetOf(words.page["by-kind"], "kind", w.kinds, link))
	}
	for i := range v.Facets {
		scrub(reflect.ValueOf(&v.Facets[i]).Elem())
	}
}

func facetOf(name, key string, terms []FacetTerm, link func(...string) string) Facet {
	f := Facet{Name: name, Key: key}
	for _, t := range terms {
		t.Count = formatCount(uint64(t.N))
		t.URL = link(key, t.Value)
		t.Label = Name(t.Value)
		if t.Label == "" {
			t.Label = "unnamed " + key
		}
		f.Terms = append(f.Terms, t)
	}
	return f
}

// groupSession is the session a group holds (its rows and cards share it).
func groupSession(g *GroupView) string {
	if len(g.Cards) > 0 {
		return g.Cards[0].Prov.Session
	}
	if len(g.Rows) > 0 {
		return g.Rows[0].session
	}
	return ""
}

// sprintf3 fills a words entry's three %s in order (the entries are the
// UI's own text, so no verb but %s appears in them).
func sprintf3(format, a, b, c string) string {
	for _, s := range []string{a, b, c} {
		format = strings.Replace(format, "%s", s, 1)
	}
	return format
}

// gist is a row's one line of the question: the prompt's first line
// without its Markdown, as a card's heading reads, cut to GistRunes. Only
// the part of the prompt a card would read as Markdown is read (a row of
// an 8 MB prompt costs what one of 16 KiB does).
func gist(prompt string, cache *markdown.Cache) string {
	prompt = prompt[:cutAt(prompt, markdown.MaxBytes)]
	opts := markdown.Options{Clean: Text}
	var d *markdown.Doc
	if cache != nil {
		d = cache.Parse(prompt, opts)
	} else {
		d = markdown.Parse(prompt, opts)
	}
	line, _ := d.FirstLine()
	if r := []rune(line); len(r) > GistRunes {
		return string(r[:GistRunes-1]) + "…"
	}
	return line
}

// NextPending is the request after id that waits for an answer, in the
// order the page shows them (groups by their most urgent request, then
// each group's requests by urgency), wrapping round, among those on the
// page o describes (its cards and rows): where the browser lands after an
// answer. "" when none other waits. It reads heads only (in any order:
// it sorts them), so an answer's redirect costs no page render.
func NextPending(heads []inbox.Card, id inbox.CardID, o WindowOptions) inbox.CardID {
	o.Cards = cmp.Or(o.Cards, DefaultPageCards)
	o.Rows = cmp.Or(o.Rows, DefaultPageRows)
	// A group is an (agent, session) pair, as groupOf draws it; only the
	// window's cards need theirs.
	type group struct{ agent, session string }
	type keyed struct {
		key        string
		c          *inbox.Card
		answerable bool
	}
	open := make([]keyed, 0, len(heads))
	for i := range heads {
		c := &heads[i]
		vd := c.Verdict(o.Now, o.Viewer)
		if vd.Settled {
			continue
		}
		k := sortKey(*c, vd)
		if o.After != "" && k <= o.After {
			continue // on an earlier page
		}
		open = append(open, keyed{k, c, vd.Answerable})
	}
	slices.SortFunc(open, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	limit := o.Cards + o.Rows
	if o.After != "" {
		limit = o.Rows // later pages are rows only
	}
	open = open[:min(len(open), limit)]
	groupOf := func(k keyed) group { return group{k.c.Agent, k.c.Key.Session} }
	first := map[group]string{} // group -> its most urgent key
	for _, k := range open {
		if _, ok := first[groupOf(k)]; !ok {
			first[groupOf(k)] = k.key
		}
	}
	slices.SortStableFunc(open, func(a, b keyed) int {
		return cmp.Or(strings.Compare(first[groupOf(a)], first[groupOf(b)]), strings.Compare(a.key, b.key))
	})
	at := slices.IndexFunc(open, func(k keyed) bool { return k.c.ID == id })
	for i := 1; i <= len(open); i++ {
		k := open[(at+i+len(open))%len(open)]
		if k.c.ID != id && k.answerable {
			return k.c.ID
		}
	}
	return ""
}

// CountPending counts heads as the inbox page's header does for v: open,
// and pending by the verdict (an informational or malformed card is
// shown, never counted).
func CountPending(heads []inbox.Card, now time.Time, v inbox.Viewer) int {
	n := 0
	for i := range heads {
		if vd := heads[i].Verdict(now, v); !vd.Settled && vd.Pending {
			n++
		}
	}
	return n
}
