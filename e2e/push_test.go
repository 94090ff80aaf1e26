package e2e

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/sse"
)

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
	_, err := pushSeq(id)
	assert.NoError(t, err, "card event id %q, want {epoch}-{inbox change seq}", id)
	cardID := card.AttrOr("data-card", "")
	require.NotEmpty(t, cardID, "pushed card has no data-card")
	assert.Equal(t, "card-"+cardID, card.AttrOr("id", ""), "pushed card's element id")
	assert.Equal(t, "permission", card.AttrOr("data-kind", ""))
	assert.Equal(t, 2, card.Find(`[data-testid="option"]`).Length(), "pushed card's option buttons")

	page := s.getPage(t, "")
	assert.Equal(t, cardID, page.cardOf(t, sess.ID).AttrOr("data-card", ""), "the page shows the pushed card")
}

// TestPushReconnectGetsWhatItMissed: a browser that reconnects with
// Last-Event-ID receives every change made while it was away, in order,
// each as a reader that stayed connected saw it or as a later change of
// the same card.
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
	from, _ := pushSeq(missedFrom)
	to, _ := pushSeq(upTo)
	for _, p := range seen.list {
		n, _ := pushSeq(p.id)
		if n > from && n <= to {
			want = append(want, p)
		}
	}
	require.NotEmpty(t, want, "nothing changed while the reader was away")

	// Each missed change arrives, in increasing id order, as itself or as
	// a later change of the same card: changes keep coming after the
	// witness's last (a card's reach, a deadline's minute), and a card
	// changed again while waiting is drawn once, at its last change.
	owed := map[string]uint64{}
	for _, p := range want {
		n, _ := pushSeq(p.id)
		owed[pushKey(p)] = n
	}
	back := s.openPush(t, "", missedFrom, false)
	var got idd
	prev := from
	for len(owed) > 0 {
		p, ok := got.add(t, back.next(t, deadline))
		if !ok {
			continue
		}
		n, _ := pushSeq(p.id)
		require.Greater(t, n, prev, "the reconnected reader's ids go back; got %v, want at least %v", got.list, want)
		prev = n
		if w, ok := owed[pushKey(p)]; ok && n >= w {
			delete(owed, pushKey(p))
		}
	}
}

// pushKey is what a later push message of the same thing stands in for:
// a card's changes by the card, others by their event.
func pushKey(p pushed) string {
	if p.card != "" {
		return "card " + p.card
	}
	return p.event
}

// pushSeq is the inbox change seq of a /push event id, {epoch}-{seq}.
func pushSeq(id string) (uint64, error) {
	_, seq, ok := strings.Cut(id, "-")
	if !ok {
		return 0, fmt.Errorf("push event id %q: no epoch", id)
	}
	return strconv.ParseUint(seq, 10, 64)
}
