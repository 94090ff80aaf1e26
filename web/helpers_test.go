package web

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// testNow is where every test clock starts.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a test clock shared by the server (Config.Now) and the inbox.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeSubmitter records every submission; err, when set, is returned.
type fakeSubmitter struct {
	mu     sync.Mutex
	subs   []inbox.Submission
	err    error
	notify chan struct{} // signalled after each Submit
	// then, when set, is called with each submission after it is
	// recorded: a test's respond path reporting its outcome at once.
	then func(inbox.Submission)
}

func (f *fakeSubmitter) Submit(_ context.Context, s inbox.Submission) error {
	f.mu.Lock()
	f.subs = append(f.subs, s)
	select {
	case f.signal() <- struct{}{}:
	default:
	}
	err, then := f.err, f.then
	f.mu.Unlock()
	if then != nil {
		then(s)
	}
	return err
}

// signal is the channel Submit signals on; the caller holds mu.
func (f *fakeSubmitter) signal() chan struct{} {
	if f.notify == nil {
		f.notify = make(chan struct{}, 1)
	}
	return f.notify
}

// wait returns after the next Submit, or after d.
func (f *fakeSubmitter) wait(d time.Duration) {
	f.mu.Lock()
	ch := f.signal()
	f.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(d):
	}
}

func (f *fakeSubmitter) all() []inbox.Submission {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inbox.Submission(nil), f.subs...)
}

func (f *fakeSubmitter) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// fakeRoster answers Reach from a map (true: connected, false: not
// connected); sessions not in it are unknown.
type fakeRoster struct {
	mu sync.Mutex
	up map[string]bool
}

func (f *fakeRoster) Reach(session string) inbox.Reach {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.up[session]
	switch {
	case !ok:
		return inbox.ReachUnknown
	case v:
		return inbox.ReachConnected
	}
	return inbox.ReachNotConnected
}

// fakeReady is the relay connections' and the database's state /readyz
// and /metrics read.
type fakeReady struct {
	feed, respond atomic.Bool
	dbDown        atomic.Bool
	dbFull        atomic.Bool
	reconnects    atomic.Int64
	mu            sync.Mutex
	outcomes      map[inbox.SubmissionState]int64
}

func (f *fakeReady) FeedConnected() bool    { return f.feed.Load() }
func (f *fakeReady) RespondConnected() bool { return f.respond.Load() }
func (f *fakeReady) FeedReconnects() int64  { return f.reconnects.Load() }

// Ping fails while dbDown; a hung database is one that waits for ctx.
func (f *fakeReady) Ping(ctx context.Context) error {
	if f.dbFull.Load() {
		return fullDisk{}
	}
	if f.dbDown.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// fullDisk is a journal's error on a full disk: the detail names the
// file, Explain does not.
type fullDisk struct{}

func (fullDisk) Error() string {
	return "journal: record: /var/lib/aepforms/aepforms.db: database or disk is full (13)"
}
func (fullDisk) Explain() string {
	return "The disk that holds the answer journal is full: new answers cannot be kept until space is freed."
}

func (f *fakeReady) Outcomes() map[inbox.SubmissionState]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.outcomes)
}

// outcome counts one command outcome, as the respond path would.
func (f *fakeReady) outcome(s inbox.SubmissionState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outcomes == nil {
		f.outcomes = map[inbox.SubmissionState]int64{}
	}
	f.outcomes[s]++
}

// harness is one UI server over a real inbox, with fake respond parts.
type harness struct {
	t       *testing.T
	clk     *clock
	in      *inbox.Inbox
	sub     *fakeSubmitter
	roster  *fakeRoster
	ready   *fakeReady
	metrics *Metrics
	cfg     Config
	srv     *httptest.Server
	conns   *heldListener // every connection srv accepted (die)
	seq     atomic.Int64
}

// setup is what an option may change before the server starts.
type setup struct {
	cfg   *Config
	deps  *Deps
	inbox *inbox.Options
	// wrap, when set, wraps the server's handler (a test watching the
	// responses as they are written).
	wrap func(http.Handler) http.Handler
	// listener, when set, is the one the server is served on (a test
	// that must know the address before the server starts).
	listener net.Listener
	// tls serves over HTTPS (httptest's certificate, which h.client
	// trusts), as a UI whose cookies are Secure is.
	tls bool
}

// option changes the server's configuration or parts before it starts.
type option func(*setup)

// watchOnly gives the server no Submitter.
func watchOnly(s *setup) { s.deps.Submitter = nil }

// withToken sets the operator secret.
func withToken(tok string) option { return func(s *setup) { s.cfg.OperatorToken = tok } }

// withSessions keeps the sessions in store (shared between harnesses,
// as a journal is between restarts).
func withSessions(store Sessions) option { return func(s *setup) { s.deps.Sessions = store } }

// withConfig applies f to the configuration.
func withConfig(f func(*Config)) option { return func(s *setup) { f(s.cfg) } }

// withInbox applies f to the inbox options.
func withInbox(f func(*inbox.Options)) option { return func(s *setup) { f(s.inbox) } }

// newHarness starts the UI on a port-0 listener; the inbox, the server and
// the test share one clock. The feed and respond path start connected.
func newHarness(t *testing.T, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, clk: &clock{t: testNow}, sub: &fakeSubmitter{},
		roster: &fakeRoster{up: map[string]bool{}}, ready: &fakeReady{}, metrics: &Metrics{}}
	h.cfg = Config{Now: h.clk.Now, Heartbeat: time.Hour, WriteTimeout: 5 * time.Second, PushEpoch: testEpoch, BatchPushEvery: 50 * time.Millisecond}
	deps := Deps{Submitter: h.sub, Roster: h.roster, Upstream: h.ready, Database: h.ready, Metrics: h.metrics}
	inOpts := inbox.Options{Now: h.clk.Now}
	st := setup{cfg: &h.cfg, deps: &deps, inbox: &inOpts}
	for _, o := range opts {
		o(&st)
	}
	h.in = inbox.New(inOpts)
	h.in.FeedState(true, nil)
	h.ready.feed.Store(true)
	h.ready.respond.Store(true)
	deps.Inbox = h.in
	handler := NewServer(h.cfg, deps)
	if st.wrap != nil {
		handler = st.wrap(handler)
	}
	h.srv = httptest.NewUnstartedServer(handler)
	if st.listener != nil {
		h.srv.Listener.Close()
		h.srv.Listener = st.listener
	}
	h.conns = &heldListener{Listener: h.srv.Listener}
	h.srv.Listener = h.conns
	if st.tls {
		h.srv.StartTLS()
	} else {
		h.srv.Start()
	}
	t.Cleanup(h.srv.Close)
	return h
}

// heldListener keeps every connection it accepted, those net/http lets
// go of (push streams taken over) too, so a test can end them all as a
// process's end does.
type heldListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *heldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

// die ends the server as its process's end would: every connection it
// accepted is closed (push streams too, which httptest's
// CloseClientConnections no longer knows once taken over), and no new
// one is accepted.
func (h *harness) die() {
	h.t.Helper()
	h.srv.CloseClientConnections()
	require.NoError(h.t, h.srv.Listener.Close())
	h.conns.mu.Lock()
	defer h.conns.mu.Unlock()
	for _, c := range h.conns.conns {
		_ = c.Close()
	}
}

// base is the server's URL with the configured base path ("http://x/forms/").
func (h *harness) base() string {
	bp := h.cfg.BasePath
	if bp == "" {
		bp = "/"
	}
	if !strings.HasSuffix(bp, "/") {
		bp += "/"
	}
	if !strings.HasPrefix(bp, "/") {
		bp = "/" + bp
	}
	return h.srv.URL + bp
}

// url is path (relative to the base path, no leading slash) on the server.
func (h *harness) url(path string) string { return h.base() + path }

// client is a browser-like client: a cookie jar, redirects not followed
// (tests look at them).
func (h *harness) client() *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(h.t, err)
	c := &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if h.srv.TLS != nil {
		c.Transport = h.srv.Client().Transport
	}
	return c
}

// response is a finished response with its body read.
type response struct {
	*http.Response
	body string
}

// doc parses the body as HTML.
func (r response) doc(t *testing.T) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
	require.NoError(t, err)
	return d
}

// do sends req with c (http.DefaultClient-like when nil) and reads the body.
func (h *harness) do(c *http.Client, req *http.Request) response {
	h.t.Helper()
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := c.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return response{Response: resp, body: string(b)}
}

// request builds a request; header pairs follow as "Name", "value", ...
func (h *harness) request(method, rawURL string, body io.Reader, header ...string) *http.Request {
	h.t.Helper()
	req, err := http.NewRequest(method, rawURL, body)
	require.NoError(h.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// getPage loads a page as a browser would (Accept text/html).
func (h *harness) getPage(c *http.Client, path string, header ...string) response {
	h.t.Helper()
	return h.do(c, h.request(http.MethodGet, h.url(path), nil, append([]string{"Accept", "text/html,application/xhtml+xml"}, header...)...))
}

// postForm posts form to path with the server's own Origin (as a page of
// this UI would), plus any extra headers.
func (h *harness) postForm(c *http.Client, path string, form url.Values, header ...string) response {
	h.t.Helper()
	hdr := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL, "Referer", h.base()}, header...)
	return h.do(c, h.request(http.MethodPost, h.url(path), strings.NewReader(form.Encode()), hdr...))
}

// Test events: one emitter, sessions chosen per request.
const (
	testSource = "aep://test.example/agents/deployer/instance-1"
	testAgent  = "deployer"
)

// emit builds an event in session from env (id, type, data...) and applies
// it to the inbox; seq and time are filled in for sequenced events.
func (h *harness) emit(env aep.Envelope) *aep.Event {
	h.t.Helper()
	if env.Source == "" {
		env.Source = testSource
	}
	if env.Agent == "" {
		env.Agent = testAgent
	}
	if env.Time == "" {
		env.Time = h.clk.Now().Format(time.RFC3339Nano)
	}
	if env.Capture == "" {
		env.Capture = "full"
	}
	if env.Seq == nil && !aep.MustOmitSeq(env.Type) {
		env.Seq = aep.Int64(h.seq.Add(1))
	}
	e, err := aep.Build(env)
	require.NoError(h.t, err)
	h.in.Apply(e)
	return e
}

// ask applies an attention.requested for req in session and returns the card id.
func (h *harness) ask(session, id string, req aep.Request) inbox.CardID {
	h.t.Helper()
	h.emit(aep.Envelope{ID: id, Type: "attention.requested", Session: session, Run: "run_1", Data: req})
	return cardID(session, id)
}

// lifecycle applies an event of typ about request id in session.
func (h *harness) lifecycle(session, id, typ string, data any) {
	h.t.Helper()
	h.emit(aep.Envelope{ID: id + "-" + strings.ReplaceAll(typ, ".", "-"), Type: typ, Session: session, Subject: id, Cause: id, Data: data})
}

func cardID(session, id string) inbox.CardID {
	return inbox.RequestKey{Source: testSource, Session: session, RequestID: id}.CardID()
}

// nameForm is a form with one required string field.
func nameForm() aep.Request {
	return aep.Request{Kind: aep.KindForm, Prompt: "What should the service be called?",
		Fields: []aep.FieldSpec{{ID: "name", Type: aep.FieldString, Label: "Service name", Required: true}}}
}

// answerForm finds card id's answer form on a page: its action and token.
func answerForm(t *testing.T, d *goquery.Document, id inbox.CardID) (action, token string) {
	t.Helper()
	f := d.Find("#" + domID(id) + ` form[data-testid="answer-form"]`)
	require.Equal(t, 1, f.Length(), "answer forms on card %s: got %d, want 1", id, f.Length())
	action, _ = f.Attr("action")
	token, _ = f.Find(`input[name="token"]`).Attr("value")
	require.NotEmpty(t, action)
	require.NotEmpty(t, token)
	return action, token
}

// relative turns an absolute path from the page into a path relative to
// the harness base.
func (h *harness) relative(path string) string {
	h.t.Helper()
	u, err := url.Parse(h.base())
	require.NoError(h.t, err)
	require.True(h.t, strings.HasPrefix(path, u.Path), "path %q is not under the base path %q", path, u.Path)
	return strings.TrimPrefix(path, u.Path)
}

// errSubmit is a Submitter failure (the relay unreachable).
var errSubmit = errors.New("respond: not connected")
