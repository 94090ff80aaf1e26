package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/view"
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
//
// Thousands of browsers look up the same change at once, so a lookup
// takes no lock: the maps are sync.Maps (lock-free reads), and the
// browsers that find a change being read or framed wait on its done
// channel, which the first one closes and so wakes them all at once (a
// mutex, or a sync.Once's, would hand itself from one waiter to the next,
// a wakeup each, while every later browser waits behind them).
type pushShare struct {
	cards     sync.Map     // uint64 (change seq) -> *sharedCard
	nCards    atomic.Int64 // entries made in cards since its last clear
	cardBytes atomic.Int64 // of the cards read into cards since its last clear
	frames    sync.Map     // frameKey -> *sharedFrame
	nFrames   atomic.Int64
	pool      sync.Pool // *bytes.Buffer for a browser's copy of a frame
}

// sharedCard is one change's card, read once; card and ok are set before
// done is closed.
type sharedCard struct {
	done chan struct{}
	card inbox.Card
	ok   bool
}

// frameKey is what a framed card message depends on beyond the server's
// settings: the change (its id), the card version, the minute its
// relative times were drawn in, the operator it is drawn for, and the
// rules' version (the rule it names, as it then was).
type frameKey struct {
	seq      uint64
	card     inbox.CardID
	version  uint64
	minute   int64
	operator string
	rules    uint64
	// role is the operator's: a viewer's card offers no form, an
	// answerer's no rule maker.
	role Role
}

// sharedFrame is one framed card message split where the tokens go;
// parts and err are set before done is closed.
type sharedFrame struct {
	done  chan struct{}
	parts [][]byte
	err   error
}

func newPushShare() *pushShare { return &pushShare{} }

// card returns change seq's card, read from in once for every browser.
func (s *pushShare) card(in Inbox, seq uint64, id inbox.CardID) (inbox.Card, bool) {
	if v, ok := s.cards.Load(seq); ok {
		e := v.(*sharedCard)
		<-e.done
		return e.card, e.ok
	}
	if s.nCards.Load() >= maxShared || s.cardBytes.Load() > maxSharedCardBytes {
		// Past the bounds the kept changes go (a browser that comes
		// to one later reads it again); each browser racing here may
		// clear, which only costs reads.
		s.cards.Clear()
		s.nCards.Store(0)
		s.cardBytes.Store(0)
	}
	e := &sharedCard{done: make(chan struct{})}
	if v, loaded := s.cards.LoadOrStore(seq, e); loaded {
		e = v.(*sharedCard)
		<-e.done
		return e.card, e.ok
	}
	s.nCards.Add(1)
	defer close(e.done) // also if the read panics: the others must not wait forever
	e.card, e.ok = in.Card(id)
	s.cardBytes.Add(int64(len(e.card.Request.Prompt) + 1024))
	return e.card, e.ok
}

// frame returns the framed card message for k, made once by build: its
// bytes split at the placeholder.
func (s *pushShare) frame(k frameKey, build func() ([]byte, string, error)) ([][]byte, error) {
	if v, ok := s.frames.Load(k); ok {
		e := v.(*sharedFrame)
		<-e.done
		return e.parts, e.err
	}
	if s.nFrames.Load() >= maxShared {
		s.frames.Clear()
		s.nFrames.Store(0)
	}
	e := &sharedFrame{done: make(chan struct{})}
	if v, loaded := s.frames.LoadOrStore(k, e); loaded {
		e = v.(*sharedFrame)
		<-e.done
		return e.parts, e.err
	}
	s.nFrames.Add(1)
	defer close(e.done) // also if build panics: the others must not wait forever
	e.err = errFramePanicked
	b, placeholder, err := build()
	if err != nil {
		// Not kept: the browsers already waiting get the error, the next
		// one builds again.
		if s.frames.CompareAndDelete(k, e) {
			s.nFrames.Add(-1)
		}
		e.err = err
		return nil, err
	}
	e.parts, e.err = bytes.Split(b, []byte(placeholder)), nil
	return e.parts, nil
}

// errFramePanicked is what browsers waiting on a framing get when its
// build panicked (the panicking browser's request is recovered).
var errFramePanicked = errors.New("web: framing a pushed card failed")

// appendCopy appends parts to buf joined by one fresh form token.
func (s *pushShare) appendCopy(buf *bytes.Buffer, parts [][]byte) {
	token := render.NewToken()
	for i, p := range parts {
		if i > 0 {
			buf.WriteString(token)
		}
		buf.Write(p)
	}
}

// getBuffer is an empty buffer for one browser's write.
func (s *pushShare) getBuffer() *bytes.Buffer {
	if buf, _ := s.pool.Get().(*bytes.Buffer); buf != nil {
		return buf
	}
	return new(bytes.Buffer)
}

// putBuffer gives buf back; one grown past maxKeptBuffer is not kept (a
// large prompt's card does not pin its size for the pool's life).
func (s *pushShare) putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxKeptBuffer {
		buf.Reset()
		s.pool.Put(buf)
	}
}

// maxKeptBuffer is the largest write buffer the pool keeps: a batch of
// up to maxBatchBytes plus its last card.
const maxKeptBuffer = 2 * maxBatchBytes

// cardFrame returns card's push message, with id, framed once for every
// browser drawn for the same operator (operator is
// operatorFrom(r.Context()), looked up once per stream): its bytes split
// where each copy's form token goes. The card's options are made only by
// the browser that frames it.
func (p *pages) cardFrame(r *http.Request, operator string, share *pushShare, seq uint64, c inbox.Card) ([][]byte, error) {
	now := p.now()
	k := frameKey{seq: seq, card: c.ID, version: c.Version, minute: now.Truncate(time.Minute).Unix(), operator: operator, rules: p.rules.rulesVersion(), role: roleFrom(r.Context())}
	return share.frame(k, func() ([]byte, string, error) {
		// The frame is every browser's: neither its render nor the
		// lookups behind it (a rule's name) are cut short when the
		// browser that happens to make it leaves.
		r := r.WithContext(context.WithoutCancel(r.Context()))
		opts := p.cardOptions(r, c, now)
		html, placeholder, err := p.frags.Template(r.Context(), c, opts)
		if err != nil {
			return nil, "", err
		}
		b, err := sse.AppendFrame(nil, sse.Message{ID: view.PushID(p.epoch, seq), Event: "card", Data: html})
		if err != nil {
			return nil, "", err
		}
		if strings.ContainsAny(placeholder, "\r\n") {
			panic("web: a fragment placeholder holds a line break") // NewFragments makes it base64url
		}
		return b, placeholder, nil
	})
}
