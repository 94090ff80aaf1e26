package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/relay"
	"github.com/aepforms/aepforms/internal/sse"
)

// wait is how long a test waits for something that should happen at once.
const wait = 5 * time.Second

const testToken = "t0ken-for-tests"

// testRelay is a relay served over a real loopback socket.
type testRelay struct {
	*relay.Relay
	srv   *httptest.Server
	token string
}

// startRelay serves a relay configured by cfg (Token defaults to
// testToken; set NoToken for the open posture).
func startRelay(t testing.TB, cfg relay.Config) *testRelay {
	t.Helper()
	r := newRelay(t, cfg)
	return serveRelay(t, r, httptest.NewServer(r.Handler()), cfg.Token)
}

// startRelaySmallBuffers serves a relay whose requests carrying the test's
// own query parameter stall=1 get a tiny kernel send buffer, so a reader
// that stalls backs the relay's writes up after a few hundred KiB instead
// of megabytes, while every other connection keeps normal buffers.
func startRelaySmallBuffers(t *testing.T, cfg relay.Config) *testRelay {
	t.Helper()
	r := newRelay(t, cfg)
	h := r.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("stall") == "1" {
			if tc, ok := req.Context().Value(connKey{}).(*net.TCPConn); ok {
				_ = tc.SetWriteBuffer(4096)
			}
		}
		h.ServeHTTP(w, req)
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Start()
	return serveRelay(t, r, srv, cfg.Token)
}

type connKey struct{}

func serveRelay(t testing.TB, r *relay.Relay, srv *httptest.Server, token string) *testRelay {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = r.Shutdown(ctx)
		srv.Close()
	})
	return &testRelay{Relay: r, srv: srv, token: token}
}

// cfg returns a config with the test token and short intervals.
func cfg() relay.Config {
	c := relay.DefaultConfig()
	c.Token = testToken
	c.WriteTimeout = 2 * time.Second
	return c
}

func (tr *testRelay) url(path string, q url.Values) string {
	u := tr.srv.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// request sends one HTTP request with the relay's token.
func (tr *testRelay) request(t testing.TB, method, path string, q url.Values, h http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, tr.url(path, q), bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	if tr.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+tr.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func emitHeaders(ct string) http.Header {
	return http.Header{"Content-Type": {ct}, "Aep-Version": {"0.1"}}
}

// post sends events: one as application/json, several as NDJSON.
func (tr *testRelay) post(t *testing.T, evs ...[]byte) (int, map[string]any) {
	t.Helper()
	ct, body := "application/json", evs[0]
	if len(evs) > 1 {
		ct, body = "application/x-ndjson", append(bytes.Join(evs, []byte("\n")), '\n')
	}
	status, _, b := tr.request(t, http.MethodPost, "/events", nil, emitHeaders(ct), body)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "body %s", b)
	return status, m
}

// mustPost posts and requires 202.
func (tr *testRelay) mustPost(t *testing.T, evs ...[]byte) {
	t.Helper()
	status, m := tr.post(t, evs...)
	require.Equal(t, http.StatusAccepted, status, "POST /events: got %d %v, want 202", status, m)
}

var idSeq atomic.Int64

// ev builds a valid event; opts edit the envelope first.
func ev(t testing.TB, typ, session string, seq int64, opts ...func(*aep.Envelope)) []byte {
	t.Helper()
	env := aep.Envelope{
		ID:      fmt.Sprintf("ev-%d", idSeq.Add(1)),
		Type:    typ,
		Time:    "2026-07-03T10:00:00Z",
		Source:  "aep://test/agent/tester/session/" + url.PathEscape(session),
		Agent:   "tester",
		Session: session,
		Seq:     aep.Int64(seq),
		Data:    map[string]any{},
	}
	if aep.IsAgentScoped(typ) {
		env.Session, env.Seq = "", nil
	}
	if aep.MustOmitSeq(typ) {
		env.Seq = nil
	}
	for _, o := range opts {
		o(&env)
	}
	e, err := aep.Build(env)
	require.NoError(t, err)
	require.NoError(t, aep.ValidateEnvelope(e), "test event %s", e.Raw())
	return e.Raw()
}

func withEpoch(n int64) func(*aep.Envelope)     { return func(e *aep.Envelope) { e.Epoch = aep.Int64(n) } }
func withID(id string) func(*aep.Envelope)      { return func(e *aep.Envelope) { e.ID = id } }
func withSource(s string) func(*aep.Envelope)   { return func(e *aep.Envelope) { e.Source = s } }
func withSeverity(s string) func(*aep.Envelope) { return func(e *aep.Envelope) { e.Severity = s } }
func withData(d any) func(*aep.Envelope)        { return func(e *aep.Envelope) { e.Data = d } }
func withCapture(c string) func(*aep.Envelope)  { return func(e *aep.Envelope) { e.Capture = c } }
func withSubject(s string) func(*aep.Envelope) {
	return func(e *aep.Envelope) { e.Subject = s; e.Cause = s }
}

// decoded parses event bytes.
func decoded(t testing.TB, b []byte) *aep.Event {
	t.Helper()
	e, err := aep.Decode(b)
	require.NoError(t, err)
	return e
}

// sseConn is an open /stream response read item by item.
type sseConn struct {
	resp  *http.Response
	items chan sse.Item
	done  chan struct{} // closed when the stream ended
}

// stream opens GET /stream with q (and h) and requires 200.
func (tr *testRelay) stream(t *testing.T, q url.Values, h http.Header) *sseConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tr.url("/stream", q), nil)
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	if tr.token != "" {
		req.Header.Set("Authorization", "Bearer "+tr.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		require.Failf(t, "GET /stream", "got %d %s, want 200", resp.StatusCode, b)
	}
	c := &sseConn{resp: resp, items: make(chan sse.Item, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		rd := sse.NewReader(resp.Body, 0)
		for {
			it, err := rd.Next()
			if err != nil {
				return
			}
			c.items <- it
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-c.done
	})
	return c
}

// next returns the next item, failing after the wait.
func (c *sseConn) next(t *testing.T) sse.Item {
	t.Helper()
	select {
	case it := <-c.items:
		return it
	case <-c.done:
		select {
		case it := <-c.items:
			return it
		default:
		}
		require.FailNow(t, "stream ended", "want another item")
	case <-time.After(wait):
		require.FailNow(t, "no item", "waited %s for the next SSE item", wait)
	}
	return sse.Item{}
}

// nextEvent skips comments (pings) and returns the next message.
func (c *sseConn) nextEvent(t *testing.T) sse.Item {
	t.Helper()
	for {
		it := c.next(t)
		if !it.IsComment {
			return it
		}
	}
}

// all reads the stream to its end (for live=0) and returns every item.
func (c *sseConn) all(t *testing.T) []sse.Item {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(wait):
		require.FailNow(t, "stream did not end", "waited %s", wait)
	}
	var out []sse.Item
	for {
		select {
		case it := <-c.items:
			out = append(out, it)
		default:
			return out
		}
	}
}

// history reads a live=0 stream with q and returns its messages' data and
// its comments.
func (tr *testRelay) history(t *testing.T, q url.Values) (events []string, comments []string) {
	t.Helper()
	q.Set("live", "0")
	for _, it := range tr.stream(t, q, nil).all(t) {
		if it.IsComment {
			comments = append(comments, it.Comment)
		} else {
			events = append(events, it.Data)
		}
	}
	return events, comments
}

// ids returns each event's id, in order.
func ids(t testing.TB, datas []string) []string {
	t.Helper()
	out := make([]string, 0, len(datas))
	for _, d := range datas {
		out = append(out, decoded(t, []byte(d)).ID())
	}
	return out
}

func idOf(t testing.TB, b []byte) string { return decoded(t, b).ID() }

// readLine reads one \n-terminated line with a deadline (raw HTTP tests).
func readLine(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	s, err := br.ReadString('\n')
	require.NoError(t, err)
	return s
}
