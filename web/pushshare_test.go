package web

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// countingInbox counts the cards read.
type countingInbox struct {
	Inbox
	reads atomic.Int64
}

func (c *countingInbox) Card(id inbox.CardID) (inbox.Card, bool) {
	c.reads.Add(1)
	return c.Inbox.Card(id)
}

// One change read by many browsers at once is one read of its card (a
// deep copy under the inbox lock), and one framing of its fragment; a
// later change is read again.
func TestPushShareReadsAndFramesAChangeOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())
	in := &countingInbox{Inbox: h.in}
	share := newPushShare()
	var framed atomic.Int64
	build := func() ([]byte, string, error) {
		framed.Add(1)
		return []byte("data: <form token=PH>PH</form>\n\n"), "PH", nil
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			c, ok := share.card(in, 7, id)
			assert.True(t, ok)
			assert.Equal(t, id, c.ID)
			parts, err := share.frame(frameKey{seq: 7, card: id}, build)
			assert.NoError(t, err)
			assert.Len(t, parts, 3, "split at each placeholder")
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), in.reads.Load(), "64 browsers, one read")
	assert.Equal(t, int64(1), framed.Load(), "64 browsers, one framing")
	share.card(in, 8, id)
	assert.Equal(t, int64(2), in.reads.Load(), "the next change is read anew")
}

// Every browser gets the same pushed card with a form token of its own.
func TestPushedCopiesDifferOnlyInTheirTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	streams := []*pushStream{h.openPush(""), h.openPush(""), h.openPush("")}
	for _, ps := range streams {
		require.Equal(t, "status", ps.next().Event)
	}
	h.ask("s1", "r1", nameForm())
	tokens := map[string]bool{}
	var bodies []string
	for _, ps := range streams {
		m := ps.next()
		art := cardMsg(t, m)
		tok := attr(art.Find(`input[name="token"]`), "value")
		require.NotEmpty(t, tok)
		tokens[tok] = true
		assert.NotContains(t, m.Data, "tok.", "no placeholder reaches a browser")
		bodies = append(bodies, strings.ReplaceAll(m.Data, tok, "TOKEN"))
	}
	assert.Len(t, tokens, 3, "one token per delivered form")
	assert.Equal(t, bodies[0], bodies[1])
	assert.Equal(t, bodies[0], bodies[2])
}

// The cards the share keeps are bounded by their request bytes, not only
// by count: changes of cards with 8 MB prompts keep at most about
// maxSharedCardBytes of them (plus the one being read).
func TestPushShareCardsBoundedByBytes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.MaxBytes = 1 << 30 }))
	big := nameForm()
	big.Prompt = strings.Repeat("p", 8<<20)
	id := h.ask("s1", "big", big)
	share := newPushShare()
	for seq := range uint64(40) {
		_, ok := share.card(h.in, seq, id)
		require.True(t, ok)
		kept := int(share.cardBytes.Load())
		assert.LessOrEqual(t, kept, maxSharedCardBytes+(8<<20)+1024, "after %d changes", seq+1)
	}
}
