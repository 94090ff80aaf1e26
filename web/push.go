package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/sse"
)

// pushSettings are the push stream's bounds: each browser's queue of
// pending changes, the write deadline and the heartbeat interval.
type pushSettings struct {
	Buffer       int
	WriteTimeout time.Duration
	Heartbeat    time.Duration
	// BatchEvery is how long a browser's batch summary waits for the
	// changes of a burst (batchSums).
	BatchEvery time.Duration
}

// handlePush streams rendered card fragments to one browser (the protocol
// is described at the top of static/app.js). Each card message's id is
// "{epoch}-{inbox change seq}" (view.PushID), so a reconnecting
// EventSource resumes with Last-Event-ID; the page passes the position it
// was rendered at as ?since= for its first connect, and a position of
// another epoch (another replica, an earlier process) gets `reload`. The catch-up and the subscription are taken
// atomically (Inbox.FollowSince), so no change falls between them. A
// browser too far behind gets `reload`; one that reads too slowly (its
// queue overflows, or a write outlasts Config.WriteTimeout) is dropped,
// counted in the push drops metric, and catches up when it reconnects.
//
// A stream is counted under its session (live): one session holds at
// most Config.MaxStreamsPerSession (429 past it), and a session that ends
// ends its streams.
func handlePush(in Inbox, pg *pages, m *Metrics, cfg pushSettings, streams *Streams, live *liveStreams) http.HandlerFunc {
	h := &pushHandler{in: in, pg: pg, m: m, cfg: cfg, streams: streams, live: live,
		share: newPushShare(), sums: newBatchSums(in, pg.batch, cfg.BatchEvery), stops: &serverStops{}}
	return func(w http.ResponseWriter, r *http.Request) {
		ls, ok := live.open(sessionFrom(r.Context()), operatorFrom(r.Context()))
		if !ok {
			w.Header().Set("Retry-After", "30")
			http.Error(w, "This sign-in has too many live pages open. Close some of its tabs, or sign in again in this one.", http.StatusTooManyRequests)
			return
		}
		live.confirm(r.Context(), ls)
		since, hasSince, foreign := resumePoint(r, pg.epoch)
		// The stream lives for hours: no deadline on the whole response,
		// one on each write (the writer's).
		optOutOfResponseDeadline(w)
		if !foreign {
			if conn, ok := takeOver(w, r); ok {
				h.serveConn(w, r, conn, ls, since, hasSince)
				return // net/http lets the connection go, with its buffers and goroutine
			}
		}
		defer live.close(ls)
		h.serveResponse(w, r, ls, since, hasSince, foreign)
	}
}

// pushHandler is handlePush's: what every browser's stream shares.
type pushHandler struct {
	in      Inbox
	pg      *pages
	m       *Metrics
	cfg     pushSettings
	streams *Streams
	live    *liveStreams
	share   *pushShare
	sums    *batchSums
	stops   *serverStops
}

// subscribe follows the inbox from since (or from now). It is taken
// before the response's head is written, so a client that has the head
// has every change made after it.
func (h *pushHandler) subscribe(since uint64, hasSince bool) (sub *inbox.Follower, changes []inbox.Change, ok bool) {
	if hasSince {
		return h.in.FollowSince(since, h.cfg.Buffer)
	}
	return h.in.Follow(h.cfg.Buffer), nil, true
}

// serveConn streams to a browser on conn, taken over from net/http, in a
// goroutine of its own that Streams owns; it returns at once.
// ls is counted until the stream is over.
func (h *pushHandler) serveConn(w http.ResponseWriter, r *http.Request, conn net.Conn, ls *liveStream, since uint64, hasSince bool) {
	handedOver := false
	defer func() {
		if !handedOver {
			h.live.close(ls)
		}
	}()
	sub, changes, subOK := h.subscribe(since, hasSince)
	sw, err := sse.NewConnWriter(conn, w.Header(), h.cfg.WriteTimeout)
	if err != nil {
		sub.Close()
		conn.Close()
		h.pg.log.Debug("web: a browser left before its push stream began", "remote", r.RemoteAddr, "err", err)
		return
	}
	if !h.streams.add() {
		sub.Close()
		conn.Close() // the server is stopping
		return
	}
	ctx, end := streamContext(r, conn, h.stops.of(r), h.streams)
	handedOver = true
	go func() {
		defer h.streams.wg.Done()
		defer h.live.close(ls)
		defer end()
		defer conn.Close()
		defer func() {
			if v := recover(); v != nil {
				h.pg.log.Error("web: panic", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()), "panic", v, "stack", string(debug.Stack()))
			}
		}()
		h.follow(sw, r.WithContext(ctx), ls, since, sub, changes, subOK)
	}()
}

// serveResponse streams through the response: HTTP/2, a writer that
// cannot be taken over, or a position of another epoch (told to reload).
// Unchunked over HTTP/1.1: the stream ends with the connection (as the
// SSE spec suggests; net/http closes it after the response). Chunked,
// every write of a card of more than 4 KiB is two or three system calls
// (net/http's connection buffer is 4 KiB), once per browser per card.
// HTTP/2 ignores it.
func (h *pushHandler) serveResponse(w http.ResponseWriter, r *http.Request, ls *liveStream, since uint64, hasSince, foreign bool) {
	w.Header().Set("Transfer-Encoding", "identity")
	var (
		sub     *inbox.Follower
		changes []inbox.Change
		subOK   bool
	)
	if !foreign {
		sub, changes, subOK = h.subscribe(since, hasSince)
	}
	sw, err := sse.NewWriter(w, h.cfg.WriteTimeout)
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		h.pg.internalError(w, r, err)
		return
	}
	if foreign {
		// Another replica's (or an earlier process's) position: its
		// seq says nothing about this inbox.
		_ = sw.Event(sse.Message{Event: "reload", Data: "another server"})
		return
	}
	h.follow(sw, r, ls, since, sub, changes, subOK)
}

// follow streams the inbox to one browser on sw until it leaves (r's
// context ends), is dropped, a write fails, or its session ends (ls:
// the browser is told to reload, and meets the sign-in page).
func (h *pushHandler) follow(sw *sse.Writer, r *http.Request, ls *liveStream, since uint64, sub *inbox.Follower, changes []inbox.Change, ok bool) {
	defer sub.Close()
	h.m.Browsers.Add(1)
	defer h.m.Browsers.Add(-1)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ls.bind(cancel)
	r = r.WithContext(ctx)

	p := &pusher{in: h.in, share: h.share, pg: h.pg, w: sw, r: r, operator: operatorFrom(r.Context()), q: queryOf(r), last: since,
		until: r.URL.Query().Get("until"), after: r.URL.Query().Get("after")}
	if r.URL.Query().Get("batches") != "" && h.pg.viewerOf(r).Answers() {
		p.sums, p.sumEvery = h.sums, h.cfg.BatchEvery // the page has a batch region
	}
	var err error
	if !ls.ended.Load() { // ended before it began (live.confirm): nothing of the inbox is sent
		err = p.stream(sub, changes, ok, h.cfg.Heartbeat)
	}
	if err == nil && ls.ended.Load() {
		err = sw.Event(sse.Message{Event: "reload", Data: ls.reloadWhy()})
	}
	if err == nil {
		sw.Done()
	}
	if sub.Dropped() || errors.Is(err, os.ErrDeadlineExceeded) {
		h.m.PushDrops.Add(1)
		h.pg.log.Debug("web: dropped a browser that read too slowly", "remote", r.RemoteAddr)
	}
}

// takeOver takes an HTTP/1.1 push stream's connection over from net/http
// (Hijack): the stream is then written to the connection directly, and
// the handler returns, so net/http's connection goroutine (its stack
// grown under the middlewares' frames), its 4 KiB read and write buffers
// and the response's own go: about half of what a browser costs the
// server. HTTP/2 cannot be taken over (false).
func takeOver(w http.ResponseWriter, r *http.Request) (net.Conn, bool) {
	if r.ProtoMajor != 1 {
		return nil, false
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	// The request had no body (a GET); what the client sends from now
	// on is not read but to see it leave.
	return conn, true
}

// streamContext is the context of a stream taken over from net/http:
// r's values, ended when the browser closes the connection or sends
// anything (read by a goroutine that only waits for that), when stop ends (the server's
// shutdown), or by end. net/http ends r's own context when the handler
// returns.
func streamContext(r *http.Request, conn net.Conn, stop context.Context, streams *Streams) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	unstop := context.AfterFunc(stop, cancel)
	streams.wg.Add(1) // the stream's own add keeps the count above 0
	go func() {
		defer streams.wg.Done()
		defer cancel()
		// A browser sends nothing on an event stream after its request:
		// any byte, as the connection's end, ends the stream (a client
		// sending a flood would otherwise cost a read per byte).
		var b [1]byte
		_, _ = conn.Read(b[:])
	}()
	return ctx, func() {
		unstop()
		cancel()
	}
}

// Streams owns the push streams taken over from net/http (HTTP/1.1):
// net/http's Shutdown neither ends nor waits for a connection taken over.
// Shutdown ends them (RegisterOnShutdown); Wait, after it, waits until
// their goroutines are over, so nothing still writes once the server's
// owner goes on to close what the streams read.
type Streams struct {
	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

// add counts one more stream, false once Wait has begun (the server is
// stopping: the stream is not begun).
func (s *Streams) add() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.wg.Add(1)
	return true
}

// Wait waits until every taken-over stream is over, or ctx ends (its
// error then); no stream begins once it is called.
func (s *Streams) Wait(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serverStops are the shutdowns of the servers push streams were taken
// over from: net/http's Shutdown neither waits for nor ends a connection
// taken over (RegisterOnShutdown is its hook for them).
type serverStops struct{ m sync.Map } // *http.Server -> context.Context

// of is a context that ends when r's server shuts down (never, for a
// request with no server).
func (s *serverStops) of(r *http.Request) context.Context {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return context.Background()
	}
	if v, ok := s.m.Load(srv); ok {
		return v.(context.Context)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if v, loaded := s.m.LoadOrStore(srv, ctx); loaded {
		cancel()
		return v.(context.Context)
	}
	srv.RegisterOnShutdown(cancel)
	return ctx
}

// resumePoint is where a browser resumes: its Last-Event-ID, else the
// ?since= its page was rendered at, each {epoch}-{seq}. foreign is a
// position of another epoch (another replica, an earlier process, or an
// id without one): the browser must reload.
func resumePoint(r *http.Request, epoch string) (since uint64, ok, foreign bool) {
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("since")} {
		if v == "" {
			continue
		}
		e, seq, cut := strings.Cut(v, "-")
		if !cut || e != epoch {
			return 0, false, true
		}
		if n, err := strconv.ParseUint(seq, 10, 64); err == nil {
			return n, true, false
		}
		return 0, false, true
	}
	return 0, false, false
}

// stream writes the catch-up, the current status, then every change and a
// heartbeat until the browser leaves, the subscription is dropped or a
// write fails (whose error it returns). Changes already waiting are
// written together, in one write (see batch).
func (p *pusher) stream(sub *inbox.Follower, catchUp []inbox.Change, ok bool, heartbeat time.Duration) error {
	if !ok {
		return p.w.Event(sse.Message{Event: "reload", Data: "too far behind"})
	}
	t := newStreamTimers(sub, p.sums != nil, heartbeat)
	defer t.stop()
	if len(catchUp) > 0 {
		if err := p.batch(catchUp, false); err != nil {
			return err
		}
		t.arm(p.sumEvery)
	}
	if err := p.addStatus(""); err != nil {
		p.release()
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	t.start()
	leave := context.AfterFunc(p.r.Context(), sub.Wake)
	defer leave()
	for {
		<-sub.Ready()
		if p.r.Context().Err() != nil {
			return nil
		}
		if err := p.due(t); err != nil {
			return err
		}
		var room [8]inbox.Change
		changes, open := sub.Take(room[:0])
		if !open {
			return nil // dropped (the caller counts it) or closed
		}
		if len(changes) == 0 {
			continue
		}
		if err := p.batch(changes, true); err != nil {
			return err
		}
		t.arm(p.sumEvery)
	}
}

// due writes what the stream's timers marked due since it last woke: the
// heartbeat, the batch summary.
func (p *pusher) due(t *streamTimers) error {
	now := t.due.Swap(0)
	if now&beatDue != 0 {
		if err := p.w.Ping(); err != nil {
			return err
		}
		t.beat.Reset(t.heartbeat)
	}
	if now&sumDue != 0 {
		t.armed = false
		wait, err := p.batches()
		if err != nil {
			return err
		}
		if wait > 0 {
			t.arm(wait)
		}
	}
	return nil
}

// What a stream's timers mark due (streamTimers.due).
const beatDue, sumDue = 1, 2

// streamTimers are one stream's heartbeat and batch summary timers. One
// channel wakes the stream, the follower's: the heartbeat, the batch
// summary's timer and the browser's leaving (its context) signal it too
// (Wake), each marking what is due. With thousands of streams woken per
// card, a receive on one channel costs far less than a select over four
// (a fifth of serve's CPU at 2000 browsers).
type streamTimers struct {
	sub       *inbox.Follower
	due       atomic.Uint32
	heartbeat time.Duration
	beat      *time.Timer // nil until start
	// sum is due once armed by the first change after the last summary,
	// so a burst of changes is one summary; sums is false for a page
	// without a batch region (never armed).
	sum   *time.Timer
	sums  bool
	armed bool
}

func newStreamTimers(sub *inbox.Follower, sums bool, heartbeat time.Duration) *streamTimers {
	t := &streamTimers{sub: sub, sums: sums, heartbeat: heartbeat}
	t.sum = time.AfterFunc(time.Hour, func() { t.mark(sumDue) })
	t.sum.Stop()
	return t
}

// mark marks what is due and wakes the stream.
func (t *streamTimers) mark(what uint32) {
	t.due.Or(what)
	t.sub.Wake()
}

// arm has the batch summary due in d, unless it is due already.
func (t *streamTimers) arm(d time.Duration) {
	if t.sums && !t.armed {
		t.sum.Reset(d)
		t.armed = true
	}
}

// start starts the heartbeat, once the stream's first write is out.
func (t *streamTimers) start() {
	t.beat = time.AfterFunc(t.heartbeat, func() { t.mark(beatDue) })
}

func (t *streamTimers) stop() {
	t.sum.Stop()
	if t.beat != nil {
		t.beat.Stop()
	}
}

// maxBatchBytes bounds one write of waiting changes: past it the rest
// wait for the next write.
const maxBatchBytes = 64 << 10

// batch writes changes, the ones waiting for the browser, in one write
// and one flush per maxBatchBytes (the last is left pending when flush is
// false: the caller adds to it). At fleet scale a write is a system call
// per browser; a browser that fell behind by a few changes (a burst of
// cards, or cards arriving faster than one reaches every browser)
// catches up in one instead of one per change.
//
// A card named again later among the changes is sent once, at its last
// change: each change frames the card as it now is, so the earlier ones
// would only draw the same card again (an answer's accepted and answered
// states often wait together). Added among them keeps it a new card
// (sent wherever it sorts).
func (p *pusher) batch(changes []inbox.Change, flush bool) error {
	last := lastChanges(changes)
	for i, c := range changes {
		if c.Kind != inbox.ChangeStatus {
			l, ok := last(c.Card)
			if ok && l.at != i {
				continue
			}
			if ok && l.added {
				c.Kind = inbox.ChangeAdded
			}
		}
		if err := p.add(c); err != nil {
			p.release()
			return err
		}
		if p.full() {
			if err := p.flush(); err != nil {
				return err
			}
		}
	}
	if !flush {
		return nil // the caller adds the status (the catch-up's)
	}
	if p.statusDue {
		if err := p.addStatus(""); err != nil {
			p.release()
			return err
		}
	}
	return p.flush()
}

// lastChange is where a card's last change is among a batch's, and
// whether one of them added it.
type lastChange struct {
	at    int
	added bool
}

// lastChanges looks up the last change of each card named more than
// once among changes (ok false: named once, send it as it is).
func lastChanges(changes []inbox.Change) func(inbox.CardID) (lastChange, bool) {
	if len(changes) < 2 {
		return func(inbox.CardID) (lastChange, bool) { return lastChange{}, false }
	}
	if len(changes) <= 16 { // a wake-up's few: no map
		return func(card inbox.CardID) (lastChange, bool) {
			l, n := lastChange{at: -1}, 0
			for i, c := range changes {
				if c.Kind != inbox.ChangeStatus && c.Card == card {
					l.at, l.added, n = i, l.added || c.Kind == inbox.ChangeAdded, n+1
				}
			}
			return l, n > 1
		}
	}
	byCard := make(map[inbox.CardID]lastChange, len(changes))
	count := make(map[inbox.CardID]int, len(changes))
	for i, c := range changes {
		if c.Kind == inbox.ChangeStatus {
			continue
		}
		l := byCard[c.Card]
		byCard[c.Card] = lastChange{at: i, added: l.added || c.Kind == inbox.ChangeAdded}
		count[c.Card]++
	}
	return func(card inbox.CardID) (lastChange, bool) {
		l := byCard[card]
		return l, count[card] > 1
	}
}

// batches writes the batch summary as of the last change sent, unless
// the browser has it already; wait > 0 is how long until it may be
// asked for again (it is not derived yet).
func (p *pusher) batches() (wait time.Duration, err error) {
	frame, wait, err := p.sums.get(p.q, p.last)
	if err != nil || frame == nil {
		return wait, err
	}
	if bytes.Equal(frame, p.lastSum) {
		return 0, nil
	}
	p.lastSum = frame
	return 0, p.w.Frame(frame)
}

// pusher writes inbox changes to one browser.
type pusher struct {
	in    Inbox
	share *pushShare // the work on a change shared with the other browsers
	pg    *pages
	w     *sse.Writer
	r     *http.Request
	// operator is the signed-in operator the cards are drawn for.
	operator string
	q        inbox.Query
	last     uint64
	buf      *bytes.Buffer // the pending write (nil between writes)
	// until and after bound the sort keys of the page the browser shows
	// ("" = unbounded): an update of a waiting request outside them is
	// not sent (a new one is: the page counts it, and a settled one: the
	// page stops counting it).
	until, after string
	// sums are the batch summaries, nil for a page without a batch
	// region; lastSum is the one the browser has.
	sums     *batchSums
	sumEvery time.Duration
	lastSum  []byte
	// ruled are the answers rules sent that this stream brought the
	// header's count for, by command id (ruleAnswered).
	ruled map[string]bool
	// statusDue is set when a change of the batch being written moves
	// the header's count on: the status follows the batch's changes.
	statusDue bool
}

// elsewhere reports whether c is a waiting request of another page than
// the browser's.
func (p *pusher) elsewhere(c inbox.Card) bool {
	if p.until == "" && p.after == "" {
		return false
	}
	vd := c.Verdict(p.pg.now(), p.pg.viewer)
	if vd.Settled {
		return false
	}
	k := view.SortKey(c, vd)
	return (p.until != "" && k > p.until) || (p.after != "" && k <= p.after)
}

// add appends one change to the browser's pending write: the card's
// fragment, `remove` when the card is gone or outside the browser's
// filter, or the status fragment.
func (p *pusher) add(c inbox.Change) error {
	if c.Seq <= p.last {
		return nil
	}
	p.last = c.Seq
	if c.Kind == inbox.ChangeStatus {
		return p.addStatus(view.PushID(p.pg.epoch, c.Seq))
	}
	card, ok := p.share.card(p.in, c.Seq, c.Card)
	if !ok || !p.q.Match(card) {
		return p.addEvent(sse.Message{ID: view.PushID(p.pg.epoch, c.Seq), Event: "remove", Data: domID(c.Card)})
	}
	if c.Kind == inbox.ChangeUpdated && p.elsewhere(card) {
		return nil
	}
	// The card's id is in its shared frame: made by the browser that
	// frames it, not by each.
	parts, err := p.pg.cardFrame(p.r, p.operator, p.share, c.Seq, card)
	if err != nil {
		return err
	}
	p.share.appendCopy(p.buffer(), parts)
	if p.ruleAnswered(card) {
		// The header's count of what rules answered moves on with it,
		// once at the batch's end (each count is a journal read).
		p.statusDue = true
	}
	return nil
}

// ruleAnswered reports whether card c holds an answer a rule sent that
// this stream has not brought the header's count for yet.
func (p *pusher) ruleAnswered(c inbox.Card) bool {
	s := c.Verdict(p.pg.now(), p.pg.viewer).Submission
	if s == nil {
		return false
	}
	if _, ok := rules.RuleOf(s.By); !ok || p.ruled[s.CommandID] {
		return false
	}
	if p.ruled == nil || len(p.ruled) >= maxRuled {
		p.ruled = map[string]bool{} // bounded: one more count at worst
	}
	p.ruled[s.CommandID] = true
	return true
}

// maxRuled bounds a stream's memory of the rule answers it counted.
const maxRuled = 1024

// addStatus appends the status fragment (banners, relay state); id is ""
// for the one sent on connect, which is not a change.
func (p *pusher) addStatus(id string) error {
	p.statusDue = false
	html, err := p.pg.status(p.r)
	if err != nil {
		return err
	}
	return p.addEvent(sse.Message{ID: id, Event: "status", Data: html})
}

// addEvent appends m framed.
func (p *pusher) addEvent(m sse.Message) error {
	buf := p.buffer()
	b, err := sse.AppendFrame(buf.AvailableBuffer(), m)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// buffer is the pending write, taken from the shared pool when there is
// none (a stream keeps none between writes).
func (p *pusher) buffer() *bytes.Buffer {
	if p.buf == nil {
		p.buf = p.share.getBuffer()
	}
	return p.buf
}

// full reports whether the pending write has reached maxBatchBytes.
func (p *pusher) full() bool { return p.buf != nil && p.buf.Len() >= maxBatchBytes }

// flush writes the pending changes, if any, in one write and flush, and
// gives the buffer back.
func (p *pusher) flush() error {
	if p.buf == nil {
		return nil
	}
	defer p.release()
	if p.buf.Len() == 0 {
		return nil
	}
	return p.w.Frame(p.buf.Bytes())
}

// release gives the pending write's buffer back unwritten.
func (p *pusher) release() {
	if p.buf != nil {
		p.share.putBuffer(p.buf)
		p.buf = nil
	}
}

// newPushEpoch is a random push epoch: 12 hex digits.
func newPushEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
