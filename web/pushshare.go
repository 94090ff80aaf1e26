package web

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/sse"
)

// The push stream's work shared among browsers.
//
// One inbox change goes to every browser on the push stream; at fleet
// scale (thousands of browsers) the work each would repeat is the cost of
// a card: reading it (a deep copy under the inbox lock, which the feed
// and every post also take) and framing its fragment as an SSE message.
// pushShare does both once per change: the first browser to send a change
// reads the card and frames the message, with the fragment cache's
// placeholder where the form token goes; every browser then writes the
// frame with its own fresh token spliced in (tokens stay one per
// delivered form).

// maxShared bounds the changes (and frames) kept; past it the oldest half
// is not kept (a browser that comes to one later reads and frames it
// again). A change is wanted only while browsers are sending it.
const maxShared = 256

// maxSharedCardBytes bounds the request bytes of the cards kept the same
// way (a card holds its whole request: 256 cards of 8 MB prompts would
// keep 2 GB): 16 MiB, counting each card's prompt and its size in the
// inbox's accounting.
const maxSharedCardBytes = 16 << 20

// pushShare is the per-change work shared among browsers. Safe for
// concurrent use.
type pushShare struct {
	mu        sync.Mutex
	cards     map[uint64]*sharedCard
	cardBytes int // of the cards read into cards
	frames    map[frameKey]*sharedFrame
	pool      sync.Pool // *bytes.Buffer for a browser's copy of a frame
}

// sharedCard is one change's card, read once.
type sharedCard struct {
	once sync.Once
	card inbox.Card
	ok   bool
}

// frameKey is what a framed card message depends on beyond the server's
// settings: the change (its id), the card version, the minute its
// relative times were drawn in, and the operator it is drawn for.
type frameKey struct {
	seq      uint64
	card     inbox.CardID
	version  uint64
	minute   int64
	operator string
}

// sharedFrame is one framed card message split where the tokens go.
type sharedFrame struct {
	once  sync.Once
	parts [][]byte
	err   error
}

func newPushShare() *pushShare {
	return &pushShare{cards: make(map[uint64]*sharedCard), frames: make(map[frameKey]*sharedFrame)}
}

// card returns change seq's card, read from in once for every browser.
func (s *pushShare) card(in Inbox, seq uint64, id inbox.CardID) (inbox.Card, bool) {
	s.mu.Lock()
	e := s.cards[seq]
	if e == nil {
		if len(s.cards) >= maxShared || s.cardBytes > maxSharedCardBytes {
			clear(s.cards)
			s.cardBytes = 0
		}
		e = &sharedCard{}
		s.cards[seq] = e
	}
	s.mu.Unlock()
	e.once.Do(func() {
		e.card, e.ok = in.Card(id)
		s.mu.Lock()
		s.cardBytes += len(e.card.Request.Prompt) + 1024
		s.mu.Unlock()
	})
	return e.card, e.ok
}

// frame returns the framed card message for k, made once by make: its
// bytes split at the placeholder.
func (s *pushShare) frame(k frameKey, build func() ([]byte, string, error)) ([][]byte, error) {
	s.mu.Lock()
	e := s.frames[k]
	if e == nil {
		if len(s.frames) >= maxShared {
			clear(s.frames)
		}
		e = &sharedFrame{}
		s.frames[k] = e
	}
	s.mu.Unlock()
	e.once.Do(func() {
		b, placeholder, err := build()
		if err != nil {
			e.err = err
			return
		}
		e.parts = bytes.Split(b, []byte(placeholder))
	})
	return e.parts, e.err
}

// write writes parts to w joined by one fresh form token.
func (s *pushShare) write(w *sse.Writer, parts [][]byte) error {
	buf, _ := s.pool.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			s.pool.Put(buf)
		}
	}()
	token := render.NewToken()
	for i, p := range parts {
		if i > 0 {
			buf.WriteString(token)
		}
		buf.Write(p)
	}
	return w.Frame(buf.Bytes())
}

// cardFrame returns card's push message, with id, framed once for every
// browser drawn for the same operator: its bytes split where each copy's
// form token goes.
func (p *pages) cardFrame(r *http.Request, share *pushShare, seq uint64, id string, c inbox.Card) ([][]byte, error) {
	now := p.now()
	opts := p.cardOptions(r, c, now)
	k := frameKey{seq: seq, card: c.ID, version: c.Version, minute: now.Truncate(time.Minute).Unix(), operator: opts.Operator}
	return share.frame(k, func() ([]byte, string, error) {
		html, placeholder, err := p.frags.Template(r.Context(), c, opts)
		if err != nil {
			return nil, "", err
		}
		b, err := sse.AppendFrame(nil, sse.Message{ID: id, Event: "card", Data: html})
		if err != nil {
			return nil, "", err
		}
		if strings.ContainsAny(placeholder, "\r\n") {
			panic("web: a fragment placeholder holds a line break") // NewFragments makes it base64url
		}
		return b, placeholder, nil
	})
}
