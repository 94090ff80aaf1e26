package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client that trickles a post's body (the attack run's 1 byte every few
// seconds to /signin) is cut at the body deadline with 408 and its
// connection closed, and counted; the UI keeps answering meanwhile.
func TestSlowBodyIsCutAtTheDeadline(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BodyTimeout = deadline }))

	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	// The safety net for a server that never cuts: the test fails at this
	// read deadline instead of hanging.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	u, err := url.Parse(h.url("signin"))
	require.NoError(t, err)
	body := url.Values{"token": {secret}, "name": {"slow"}}.Encode()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
		u.Path, u.Host, h.srv.URL, len(body), body[:1])
	require.NoError(t, err)
	start := time.Now()

	// Trickle the rest, a byte at a time, until the server hangs up.
	trickled := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-trickled })
	go func() {
		defer close(trickled)
		tick := time.NewTicker(deadline / 10)
		defer tick.Stop()
		for i := 1; i < len(body)-1; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := conn.Write([]byte{body[i]}); err != nil {
					return
				}
			}
		}
	}()

	// While the body trickles, the UI answers.
	r := h.do(nil, h.request(http.MethodGet, h.url("healthz"), nil))
	assert.Equal(t, http.StatusOK, r.StatusCode, "healthz during a trickled post: got %d", r.StatusCode)

	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the server must answer the trickling client, not hold it")
	elapsed := time.Since(start)
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "got %d %s", resp.StatusCode, rest)
	assert.GreaterOrEqual(t, elapsed, deadline, "cut at the deadline, not before")
	assert.True(t, resp.Close, "the connection is closed after the 408")
	_, err = conn.Read(make([]byte, 1))
	// EOF, or a reset when a trickled byte crossed the close.
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "the server closed the connection: got %v", err)

	assert.Equal(t, int64(1), h.metrics.SlowClients.Load())
	m := h.scrape("Authorization", "Bearer "+secret)
	assert.Equal(t, 1.0, m["aepforms_slow_clients_total"], "metrics: %v", m)
}

// A post that arrives in time is read whole and handled as before, and a
// body over the size limit still reaches the handler as too large.
func TestBodyWithinTheDeadlineIsHandled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.BodyTimeout = time.Second; c.MaxBody = 1 << 10 }))
	c := h.client()
	h.signIn(c, "ann")
	id := h.ask("s1", "r1", nameForm())
	action, token := answerForm(t, h.getPage(c, "").doc(t), id)
	big := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {strings.Repeat("x", 2<<10)}})
	assert.Equal(t, http.StatusRequestEntityTooLarge, big.StatusCode, "too large: got %d %s", big.StatusCode, big.body)
	ok := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"x"}})
	assert.Equal(t, http.StatusSeeOther, ok.StatusCode, "in time: got %d %s", ok.StatusCode, ok.body)
	assert.Zero(t, h.metrics.SlowClients.Load())
}

// deadlineRecorder is a ResponseWriter that records the write deadlines
// set through http.ResponseController, and says when it is first flushed.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	mu        sync.Mutex
	deadlines []time.Time
	flushed   chan struct{}
	once      sync.Once
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) Flush() {
	d.ResponseRecorder.Flush()
	d.once.Do(func() { close(d.flushed) })
}

func (d *deadlineRecorder) all() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.deadlines...)
}

// An ordinary response is written under a deadline of ResponseTimeout;
// the push stream, which lives for hours, lifts it (its writer bounds
// each write instead), so no whole-response deadline is in force while
// it waits for changes.
func TestResponsesHaveAWriteDeadlineButThePushStream(t *testing.T) {
	t.Parallel()
	const timeout = 7 * time.Second
	h := newHarness(t, withConfig(func(c *Config) { c.ResponseTimeout = timeout }))
	srv := NewServer(h.cfg, Deps{Inbox: h.in, Metrics: &Metrics{}})

	for _, path := range []string{"/healthz", "/", "/nowhere"} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{})}
		before := time.Now()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
		d := rec.all()
		require.Len(t, d, 1, "%s: one deadline, got %v", path, d)
		assert.WithinRange(t, d[0], before.Add(timeout), time.Now().Add(timeout), "%s: the deadline is ResponseTimeout from the start", path)
	}

	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/push", nil).WithContext(ctx))
	}()
	<-rec.flushed // the stream is open
	cancel()
	<-done
	d := rec.all()
	require.GreaterOrEqual(t, len(d), 2, "push: deadlines %v", d)
	assert.False(t, d[0].IsZero(), "the response deadline is set before routing")
	assert.True(t, d[len(d)-1].IsZero(), "push: no deadline is left in force on the stream: %v", d)
}
