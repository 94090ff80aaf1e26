package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/sse"
)

// pushStream reads the UI's browser push (/push) as an EventSource does,
// reconnecting with Last-Event-ID when the server ends the stream (a
// dropped slow reader) if asked to.
type pushStream struct {
	items   chan sse.Item
	pending []sse.Item
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	lastID string // the last event id received, across reconnects
	err    error  // why the stream ended, when it did not reconnect
}

// openPush connects to {ui}/push{query} (lastEventID "" = a first
// connect) and returns once the server has subscribed it (its first
// status event arrived). Events before that are kept for next.
func (s *stack) openPush(t *testing.T, query, lastEventID string, reconnect bool) *pushStream {
	t.Helper()
	ctx, cancel := context.WithCancel(s.ctx)
	p := &pushStream{items: make(chan sse.Item, 1024), cancel: cancel, lastID: lastEventID}
	first := make(chan error, 1)
	p.wg.Go(func() { p.run(ctx, s.resolve(t, nil, "push"+query).String(), reconnect, first) })
	t.Cleanup(p.close)
	select {
	case err := <-first:
		require.NoError(t, err, "GET /push")
	case <-time.After(stackWait):
		t.Fatalf("GET /push: no response within %v", stackWait)
	}
	deadline := time.After(stackWait)
	for {
		select {
		case it, ok := <-p.items:
			require.True(t, ok, "the push stream ended before its first status event: %v", p.endErr())
			p.pending = append(p.pending, it)
			if !it.IsComment && it.Event == "status" {
				return p
			}
		case <-deadline:
			t.Fatalf("no status event on /push within %v", stackWait)
		}
	}
}

func (p *pushStream) run(ctx context.Context, u string, reconnect bool, first chan<- error) {
	defer close(p.items)
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
			if id := p.last(); id != "" {
				req.Header.Set("Last-Event-ID", id)
			}
		}
		var resp *http.Response
		if err == nil {
			resp, err = http.DefaultClient.Do(req)
		}
		if err == nil && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
			err = errors.New("push answered " + resp.Status + " " + resp.Header.Get("Content-Type"))
			resp.Body.Close()
		}
		if attempt == 0 {
			first <- err
		}
		if err != nil {
			p.end(err)
			return
		}
		rd := sse.NewReader(resp.Body, 0)
		err = p.read(ctx, rd)
		resp.Body.Close()
		if ctx.Err() != nil || !reconnect {
			p.end(err)
			return
		}
		// Wait the stream's reconnection time, as EventSource does.
		wait := rd.Retry()
		if wait <= 0 {
			wait = pushRetry
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			p.end(ctx.Err())
			return
		}
	}
}

// pushRetry is the reconnection time of a push reader when the server
// set none (browsers use a few seconds; tests need less).
const pushRetry = 50 * time.Millisecond

func (p *pushStream) read(ctx context.Context, rd *sse.Reader) error {
	for {
		it, err := rd.Next()
		if err != nil {
			return err
		}
		switch {
		case !it.IsComment && it.Event == "reload":
			// Too far behind to catch up: the page reloads, and its
			// next stream starts afresh.
			p.mu.Lock()
			p.lastID = ""
			p.mu.Unlock()
		case !it.IsComment && it.ID != "":
			p.mu.Lock()
			p.lastID = it.ID
			p.mu.Unlock()
		}
		select {
		case p.items <- it:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *pushStream) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastID
}

func (p *pushStream) end(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

func (p *pushStream) endErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// close ends the stream and waits for its reader.
func (p *pushStream) close() {
	p.cancel()
	p.wg.Wait()
}

// next returns the next message (comments skipped), failing the test at
// deadline or when the stream ended.
func (p *pushStream) next(t *testing.T, deadline <-chan time.Time) sse.Item {
	t.Helper()
	it, ok := p.nextOr(t, deadline)
	if !ok {
		t.Fatalf("no push event within %v", stackWait)
	}
	return it
}

// nextOr is next, reporting false at deadline instead of failing.
func (p *pushStream) nextOr(t *testing.T, deadline <-chan time.Time) (sse.Item, bool) {
	t.Helper()
	for {
		if len(p.pending) > 0 {
			it := p.pending[0]
			p.pending = p.pending[1:]
			if !it.IsComment {
				return it, true
			}
			continue
		}
		select {
		case it, ok := <-p.items:
			if !ok {
				t.Fatalf("the push stream ended: %v", p.endErr())
			}
			if !it.IsComment {
				return it, true
			}
		case <-deadline:
			return sse.Item{}, false
		}
	}
}

// fragment parses a card event's data.
func fragment(t *testing.T, data string) *goquery.Selection {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(data))
	require.NoError(t, err)
	return doc.Selection
}

// awaitCard waits, by push, until the card of session satisfies match,
// and returns it. It reads the page narrowed to the session after
// subscribing, so a card already there counts and no change is missed.
func (s *stack) awaitCard(t *testing.T, session, what string, match func(*goquery.Selection) bool) *goquery.Selection {
	t.Helper()
	q := "?session=" + url.QueryEscape(session)
	ps := s.openPush(t, q, "", true)
	defer ps.close()
	check := func() *goquery.Selection {
		p := s.getPage(t, q)
		if c := cardsIn(p.doc.Selection, session); c.Length() == 1 && match(c) {
			return c
		}
		return nil
	}
	if c := check(); c != nil {
		return c
	}
	last, reloaded := "not pushed", false
	deadline := time.After(stackWait)
	for {
		it, ok := ps.nextOr(t, deadline)
		if !ok {
			t.Fatalf("waiting %v for %s: the card's last pushed state is %s", stackWait, what, last)
		}
		switch it.Event {
		case "card":
			c := cardsIn(fragment(t, it.Data), session)
			if c.Length() == 1 {
				last = fmt.Sprintf("%q (%s)", stateOf(c), strings.TrimSpace(c.Find(`[data-testid="state"]`).Text()))
				if match(c) {
					return c
				}
			}
		case "reload":
			reloaded = true
		case "status":
			// After a reload, the new stream's first status means it is
			// subscribed: read the page again.
			if reloaded {
				reloaded = false
				if c := check(); c != nil {
					return c
				}
			}
		}
	}
}

// stateOf is a card's state line kind (data-state of its state line).
func stateOf(c *goquery.Selection) string {
	return c.Find(`[data-testid="state"]`).AttrOr("data-state", "")
}

// inState matches a card whose state line is one of states.
func inState(states ...string) func(*goquery.Selection) bool {
	return func(c *goquery.Selection) bool {
		st := stateOf(c)
		for _, s := range states {
			if st == s {
				return true
			}
		}
		return false
	}
}

// pushed is one id'd message of a push stream: its change seq, event and
// the card it is about.
type pushed struct {
	id, event, card string
}

// idd records the id'd messages of a stream: a message whose id differs
// from the one before it carried an id field (ids are increasing change
// seqs; a message without one repeats the last).
type idd struct {
	prev string
	list []pushed
}

func (d *idd) add(t *testing.T, it sse.Item) (pushed, bool) {
	if it.ID == d.prev {
		return pushed{}, false
	}
	d.prev = it.ID
	p := pushed{id: it.ID, event: it.Event}
	switch it.Event {
	case "card":
		p.card = fragment(t, it.Data).Find(`[data-testid="card"]`).AttrOr("data-card", "")
	case "remove":
		p.card = strings.TrimPrefix(it.Data, "card-")
	}
	d.list = append(d.list, p)
	return p, true
}

// TestPushNewRequestReachesReader: a request the agent asks reaches a
// reader of the UI's push as a card event carrying the card, the same
// card the page then shows.
func TestPushNewRequestReachesReader(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	reader := s.openPush(t, "", "", false)
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	sess, _ := askedRequest(t, ag, agent.ScenarioPermission)

	deadline := time.After(stackWait)
	var card *goquery.Selection
	var id string
	for card == nil {
		it := reader.next(t, deadline)
		if it.Event != "card" {
			continue
		}
		if c := cardsIn(fragment(t, it.Data), sess.ID); c.Length() == 1 {
			card, id = c, it.ID
		}
	}
	_, err := strconv.ParseUint(id, 10, 64)
	assert.NoError(t, err, "card event id %q, want the inbox change seq", id)
	cardID := card.AttrOr("data-card", "")
	require.NotEmpty(t, cardID, "pushed card has no data-card")
	assert.Equal(t, "card-"+cardID, card.AttrOr("id", ""), "pushed card's element id")
	assert.Equal(t, "permission", card.AttrOr("data-kind", ""))
	assert.Equal(t, 2, card.Find(`[data-testid="option"]`).Length(), "pushed card's option buttons")

	page := s.getPage(t, "")
	assert.Equal(t, cardID, page.cardOf(t, sess.ID).AttrOr("data-card", ""), "the page shows the pushed card")
}

// TestPushReconnectGetsWhatItMissed: a browser that reconnects with
// Last-Event-ID receives exactly the changes made while it was away, in
// order, as a reader that stayed connected saw them.
func TestPushReconnectGetsWhatItMissed(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	witness := s.openPush(t, "", "", false)
	var seen idd
	deadline := time.After(stackWait)
	// until reads the witness until it has pushed a card of each session.
	until := func(sessions ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, x := range sessions {
			want[x] = true
		}
		for len(want) > 0 {
			it := witness.next(t, deadline)
			seen.add(t, it)
			if it.Event == "card" {
				for x := range want {
					if cardsIn(fragment(t, it.Data), x).Length() == 1 {
						delete(want, x)
					}
				}
			}
		}
	}

	away := s.openPush(t, "", "", false)
	first := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy}})
	s1, _ := askedRequest(t, first, agent.ScenarioDeploy)
	until(s1.ID)
	for got := false; !got; {
		it := away.next(t, deadline)
		got = it.Event == "card" && cardsIn(fragment(t, it.Data), s1.ID).Length() == 1
	}
	away.close()
	missedFrom := away.last()
	require.NotEmpty(t, missedFrom, "the first reader received no id")

	second := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioInput, agent.ScenarioPromptOnly}})
	s2, _ := askedRequest(t, second, agent.ScenarioInput)
	s3, _ := askedRequest(t, second, agent.ScenarioPromptOnly)
	until(s2.ID, s3.ID)
	upTo := seen.list[len(seen.list)-1].id

	var want []pushed
	from, _ := strconv.ParseUint(missedFrom, 10, 64)
	to, _ := strconv.ParseUint(upTo, 10, 64)
	for _, p := range seen.list {
		n, _ := strconv.ParseUint(p.id, 10, 64)
		if n > from && n <= to {
			want = append(want, p)
		}
	}
	require.NotEmpty(t, want, "nothing changed while the reader was away")

	back := s.openPush(t, "", missedFrom, false)
	var got idd
	for {
		p, ok := got.add(t, back.next(t, deadline))
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(p.id, 10, 64)
		require.LessOrEqual(t, n, to, "the reconnected reader got id %d past %d before it; got %v, want %v", n, to, got.list, want)
		if n == to {
			break
		}
	}
	assert.Equal(t, want, got.list, "changes after Last-Event-ID %s: got (reconnected), want (as the witness saw them)", missedFrom)
}
