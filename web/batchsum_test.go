package web

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/sse"
)

// headsInbox counts the reads of every head (what a batch summary or
// a region render costs).
type headsInbox struct {
	Inbox
	heads atomic.Int64
}

func (c *headsInbox) Heads(q inbox.Query) []inbox.Card {
	c.heads.Add(1)
	return c.Inbox.Heads(q)
}

// summaryOf parses a `batches` push message.
func summaryOf(t *testing.T, m sse.Message) view.BatchSummary {
	t.Helper()
	require.Equal(t, "batches", m.Event, "event: got %q (data %.200q), want batches", m.Event, m.Data)
	var s view.BatchSummary
	require.NoError(t, json.Unmarshal([]byte(m.Data), &s))
	return s
}

// A page with a batch region (batches=1) is sent the group counts once a
// burst of card changes is over; a page without one is sent none.
func TestPushSendsTheBatchSummary(t *testing.T) {
	h := newHarness(t)
	with := h.openPush("?batches=1")
	without := h.openPush("")
	for _, ps := range []*pushStream{with, without} {
		require.Equal(t, "status", ps.next().Event)
	}
	for i := range 3 {
		h.ask("s1", "p"+strconv.Itoa(i), permissionReq())
	}
	var s view.BatchSummary
	for {
		m := with.next()
		if m.Event == "card" {
			continue
		}
		s = summaryOf(t, m)
		if len(s.Groups) == 1 && s.Groups[0].Count == 3 {
			break // an earlier one may have caught the burst half way
		}
	}
	assert.Equal(t, "3 waiting", s.Groups[0].Text)
	assert.Equal(t, "3 questions in 1 group", s.Count)

	h.ask("s2", "other", envForm()) // a shape alone: no group, a summary all the same
	for range 3 {
		assert.Equal(t, "card", without.next().Event)
	}
	assert.Equal(t, "card", without.next().Event, "no summary for a page without a batch region")
}

// However many browsers of a filter ask for the summary during a burst,
// it is derived at most once per interval, and the one asked for after
// the burst holds its every change.
func TestBatchSummaryIsDerivedOncePerInterval(t *testing.T) {
	h := newHarness(t)
	counted := &headsInbox{Inbox: h.in}
	cfg := h.cfg
	cfg.defaults()
	every := 100 * time.Millisecond
	sums := newBatchSums(counted, newPages(cfg, Deps{Inbox: counted, Submitter: h.sub, Roster: h.roster}).batch, every)

	const browsers, cards = 200, 60
	start := time.Now()
	for i := range cards {
		h.ask("s1", "q"+strconv.Itoa(i), permissionReq())
		seq := h.in.Seq()
		var wg sync.WaitGroup
		for range browsers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := sums.get(inbox.Query{}, seq)
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	derived := counted.heads.Load()
	assert.LessOrEqual(t, derived, int64(elapsed/every)+2, "%d browsers x %d changes over %s: derived %d times", browsers, cards, elapsed, derived)

	// After the burst: the summary as of its last change.
	deadline := time.Now().Add(wait)
	for {
		frame, again, err := sums.get(inbox.Query{}, h.in.Seq())
		require.NoError(t, err)
		if frame != nil {
			assert.Contains(t, string(frame), `"text":"60 waiting"`)
			assert.True(t, strings.HasPrefix(string(frame), "event: batches\n"), "no id: a summary is no change of its own")
			break
		}
		require.True(t, time.Now().Before(deadline), "no summary within %s", wait)
		time.Sleep(again)
	}
}
