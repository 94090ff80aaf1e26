package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/aepforms/aepforms/internal/sse"
)

// benchBrowser follows the inbox as the page's script does (DESIGN.md,
// "Browser push protocol"): it loads the page, then reads /push from the
// page's since; a `card` fragment replaces its view of that card (unless
// its data-version is older), `remove` drops it, a stream the server
// ended (a dropped slow reader) is resumed with Last-Event-ID, and
// `reload` loads the page again. For each card it keeps the first time
// each state was seen, stamped when the SSE reader returned the message.
type benchBrowser struct {
	s      *benchStack
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	cards      map[string]*benchCardView
	changed    chan struct{} // closed and replaced at every change
	lastID     string
	reloads    int // page loads after the first
	reconnects int // streams resumed with Last-Event-ID
	err        error
}

// benchCardView is what the browser shows of one card.
type benchCardView struct {
	version uint64
	state   string               // the article's data-state
	reach   string               // the provenance's data-reach: yes, no-control, ambiguous, no, unknown or ""
	first   map[string]time.Time // when each state was first seen
}

// benchOpenBrowser loads the page and follows its push stream until the
// benchmark ends.
func (s *benchStack) benchOpenBrowser(tb testing.TB) *benchBrowser {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	br := &benchBrowser{s: s, cancel: cancel, done: make(chan struct{}),
		cards: map[string]*benchCardView{}, changed: make(chan struct{})}
	push, err := br.load(ctx)
	if err != nil {
		cancel()
		tb.Fatalf("browser: %v", err)
	}
	go br.run(ctx, push)
	tb.Cleanup(br.close)
	return br
}

// close stops following the stream and waits for the reader.
func (br *benchBrowser) close() {
	br.cancel()
	<-br.done
}

func (br *benchBrowser) run(ctx context.Context, push string) {
	defer close(br.done)
	for ctx.Err() == nil {
		reload, err := br.follow(ctx, push)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			br.fail(err)
			return
		}
		if reload {
			if push, err = br.load(ctx); err != nil {
				br.fail(err)
				return
			}
			br.count(&br.reloads)
			continue
		}
		br.count(&br.reconnects)
	}
}

// load fetches the page, replaces the browser's view with its cards and
// returns the push URL it names (with the page's since).
func (br *benchBrowser) load(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, br.s.uiURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := br.s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /: %w", err)
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /: %s", resp.Status)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET /: %w", err)
	}
	if doc.Find("[data-row]").Length() > 0 {
		return "", errors.New("GET /: the page shows requests as rows, which this browser does not open: start serve with benchAllInFull")
	}
	push, ok := doc.Find("body").Attr("data-push")
	if !ok {
		return "", errors.New("GET /: the page's body has no data-push")
	}
	base, _ := url.Parse(br.s.uiURL)
	pu, err := base.Parse(push)
	if err != nil {
		return "", fmt.Errorf("data-push %q: %w", push, err)
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	present := map[string]bool{}
	doc.Find("article[data-card]").Each(func(_ int, a *goquery.Selection) {
		present[br.applyLocked(a, at)] = true
	})
	for id := range br.cards {
		if !present[id] {
			delete(br.cards, id)
		}
	}
	br.lastID = ""
	br.changedLocked()
	return pu.String(), nil
}

// follow reads one push connection until it ends. reload is true when
// the server asked for a page load.
func (br *benchBrowser) follow(ctx context.Context, push string) (reload bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, push, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	br.mu.Lock()
	if br.lastID != "" {
		req.Header.Set("Last-Event-ID", br.lastID)
	}
	br.mu.Unlock()
	resp, err := br.s.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET /push: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /push: %s", resp.Status)
	}
	rd := sse.NewReader(resp.Body, 0)
	for {
		it, err := rd.Next()
		at := time.Now()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil // the server ended the stream: resume
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, fmt.Errorf("reading /push: %w", err)
		}
		if it.IsComment {
			continue
		}
		switch it.Event {
		case "reload":
			return true, nil
		case "card":
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(it.Data))
			if err != nil {
				return false, fmt.Errorf("card fragment: %w", err)
			}
			br.mu.Lock()
			br.applyLocked(doc.Find("article[data-card]").First(), at)
			br.lastID = it.ID
			br.changedLocked()
			br.mu.Unlock()
		case "remove":
			br.mu.Lock()
			delete(br.cards, strings.TrimPrefix(it.Data, "card-"))
			br.lastID = it.ID
			br.changedLocked()
			br.mu.Unlock()
		default:
			if it.ID != "" {
				br.mu.Lock()
				br.lastID = it.ID
				br.mu.Unlock()
			}
		}
	}
}

// applyLocked takes one card article into the view and returns its id.
func (br *benchBrowser) applyLocked(a *goquery.Selection, at time.Time) string {
	id := a.AttrOr("data-card", "")
	version, _ := strconv.ParseUint(a.AttrOr("data-version", "0"), 10, 64)
	c := br.cards[id]
	if c == nil {
		c = &benchCardView{first: map[string]time.Time{}}
		br.cards[id] = c
	} else if version < c.version {
		return id // an older rendering: the browser ignores it
	}
	c.version = version
	c.state = a.AttrOr("data-state", "")
	c.reach = a.Find("[data-reach]").First().AttrOr("data-reach", "")
	if _, ok := c.first[c.state]; !ok {
		c.first[c.state] = at
	}
	return id
}

func (br *benchBrowser) changedLocked() {
	close(br.changed)
	br.changed = make(chan struct{})
}

func (br *benchBrowser) count(n *int) {
	br.mu.Lock()
	*n++
	br.mu.Unlock()
}

func (br *benchBrowser) fail(err error) {
	br.mu.Lock()
	br.err = err
	br.changedLocked()
	br.mu.Unlock()
}

// await waits until cond, called with the browser's view (under its
// lock; cond must not keep the map), returns true.
func (br *benchBrowser) await(tb testing.TB, what string, cond func(cards map[string]*benchCardView) bool) {
	tb.Helper()
	deadline := time.NewTimer(benchWait)
	defer deadline.Stop()
	for {
		br.mu.Lock()
		ok, err, ch := cond(br.cards), br.err, br.changed
		br.mu.Unlock()
		if ok {
			return
		}
		if err != nil {
			tb.Fatalf("browser, waiting for %s: %v", what, err)
		}
		select {
		case <-ch:
		case <-deadline.C:
			tb.Fatalf("browser: no %s within %v", what, benchWait)
		}
	}
}

// firstSeen is the earliest time the card was seen in any of states.
func (br *benchBrowser) firstSeen(id string, states ...string) (time.Time, bool) {
	br.mu.Lock()
	defer br.mu.Unlock()
	c := br.cards[id]
	if c == nil {
		return time.Time{}, false
	}
	var t time.Time
	for _, s := range states {
		if at, ok := c.first[s]; ok && (t.IsZero() || at.Before(t)) {
			t = at
		}
	}
	return t, !t.IsZero()
}

// stats returns how often the browser reloaded and resumed.
func (br *benchBrowser) stats() (reloads, reconnects int) {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.reloads, br.reconnects
}
