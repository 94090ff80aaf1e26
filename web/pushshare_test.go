package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// countingConn counts the server's writes on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: &l.writes}, nil
}

// A browser that comes back behind by ten changes gets them, and the
// status, in one write (a system call per browser, at fleet scale) rather
// than one per change, in order and each with its own id.
func TestPushWritesWaitingChangesTogether(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ts := httptest.NewUnstartedServer(h.srv.Config.Handler)
	ln := &countingListener{Listener: ts.Listener}
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	h.srv = ts

	from := h.in.Seq()
	var ids []inbox.CardID
	for i := range 10 {
		ids = append(ids, h.ask("s1", "r"+strconv.Itoa(i), nameForm()))
	}
	ps := h.openPush("?since=" + pushID(from))
	for i, id := range ids {
		m := ps.next()
		require.Equal(t, "card", m.Event, "change %d", i)
		assert.Equal(t, domID(id), attr(cardMsg(t, m), "id"), "change %d in order", i)
		assert.Equal(t, pushID(from+uint64(i)+1), m.ID)
	}
	require.Equal(t, "status", ps.next().Event)
	// the response's headers are flushed first, in a write of their own
	assert.Equal(t, int64(1), ln.writes.Load()-1, "ten cards and the status in one batch")
}

// A card of several KiB reaches a browser in one write. With HTTP/1.1's
// chunked encoding net/http's 4 KiB connection buffer would split it into
// two or three system calls per browser; the push stream is sent
// unchunked (its end is the connection's close, as the SSE spec
// suggests), so a write is one.
func TestPushWritesALargeCardOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ts := httptest.NewUnstartedServer(h.srv.Config.Handler)
	ln := &countingListener{Listener: ts.Listener}
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	h.srv = ts

	ps := h.openPush("")
	require.Equal(t, "status", ps.next().Event)
	before := ln.writes.Load()
	req := nameForm()
	req.Prompt = strings.Repeat("Deploy the build to production? ", 400) // 12.8 KB
	id := h.ask("s1", "big", req)
	m := ps.next()
	require.Equal(t, "card", m.Event)
	assert.Equal(t, domID(id), attr(cardMsg(t, m), "id"))
	assert.Greater(t, len(m.Data), 12<<10)
	assert.Equal(t, int64(1), ln.writes.Load()-before, "one write for the card")
	assert.Empty(t, ps.resp.TransferEncoding, "not chunked")
}

// The browser that happens to frame a change may leave while it does: the
// frame is everyone's, so it is made whole and the next browser of the
// same operator gets it (the leaving browser's cancelled context once
// ended every stream of that operator, and again on their reconnect).
func TestAFrameOutlivesTheBrowserThatMadeIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ask("s1", "r1", nameForm())
	card, ok := h.in.Card(id)
	require.True(t, ok)
	cfg := h.cfg
	cfg.defaults()
	p := newPages(cfg, Deps{Inbox: h.in, Submitter: h.sub})
	share := newPushShare()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	leaving := httptest.NewRequest(http.MethodGet, "/push", nil).WithContext(ctx)
	staying := httptest.NewRequest(http.MethodGet, "/push", nil)
	first, err := p.cardFrame(leaving, "", share, 7, card)
	require.NoError(t, err, "the framing browser left, the frame is made all the same")
	next, err := p.cardFrame(staying, "", share, 7, card)
	require.NoError(t, err, "the next browser gets the frame")
	assert.Equal(t, first, next, "one framing for both")
}

// A framing that fails is not kept: the next browser builds it again
// rather than getting the same error for as long as the frame is shared.
func TestAFailedFrameIsNotKept(t *testing.T) {
	t.Parallel()
	share := newPushShare()
	k := frameKey{seq: 7, card: "c1"}
	_, err := share.frame(k, func() ([]byte, string, error) { return nil, "", errors.New("render failed") })
	require.Error(t, err)
	parts, err := share.frame(k, func() ([]byte, string, error) { return []byte("data: PH\n\n"), "PH", nil })
	require.NoError(t, err, "built again")
	assert.Len(t, parts, 2)
}
