package feed

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/relay"
)

// realRelay serves an embedded relay on addr ("127.0.0.1:0" for a new
// port) until stop is called or the test ends.
type realRelay struct {
	r    *relay.Relay
	srv  *http.Server
	addr string
	done chan struct{}
}

func startRealRelay(t *testing.T, addr, token string) *realRelay {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	cfg := relay.DefaultConfig()
	cfg.Token = token
	rr := &realRelay{r: relay.New(cfg), addr: ln.Addr().String(), done: make(chan struct{})}
	rr.srv = &http.Server{Handler: rr.r.Handler()}
	go func() {
		defer close(rr.done)
		_ = rr.srv.Serve(ln)
	}()
	t.Cleanup(rr.stop)
	return rr
}

// stop drains the relay and closes its server.
func (rr *realRelay) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rr.r.Shutdown(ctx)
	_ = rr.srv.Shutdown(ctx)
	<-rr.done
}

func (rr *realRelay) post(t *testing.T, token string, e *aep.Event) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+rr.addr+"/events", bytes.NewReader(e.Raw()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("AEP-Version", aep.Version)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "post %s %s", e.Type(), e.ID())
}

// inboxTypes reports whether DefaultFilter passes type typ.
func inboxTypes(typ string) bool {
	if typ == "tool.requested" {
		return true
	}
	for _, p := range []string{"attention.", "control.", "session.", "run.", "agent."} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// TestAgainstTheEmbeddedRelay: the golden corpus's non-command events go
// through the real relay to the feed with the production filter: what the
// filter passes arrives once, and a dropped connection replays nothing twice.
func TestAgainstTheEmbeddedRelay(t *testing.T) {
	t.Parallel()
	const token = "integration-token"
	rr := startRealRelay(t, "127.0.0.1:0", token)
	var want []*aep.Event
	for _, e := range goldenEvents(t) {
		rr.post(t, token, e)
		if inboxTypes(e.Type()) {
			want = append(want, e)
		}
	}
	cfg := testConfig("http://" + rr.addr)
	cfg.Token = token
	sink := newRecSink()
	startClient(t, cfg, sink)
	waitConnected(t, sink)
	got := waitApplied(t, sink, len(want))
	var wantIDs []string
	for _, e := range want {
		wantIDs = append(wantIDs, e.ID())
	}
	assert.ElementsMatch(t, wantIDs, got, "exactly the events the production filter passes")

	// A restart of the relay process: history gone. The agent re-sends its
	// pending request byte-identically (as agents do after a reconnect) and
	// goes on; a session that was quiet and speaks again later has lost
	// what the old relay held.
	pending := event(t, "s live", 0, "attention.requested", "pending-req")
	quiet := event(t, "s quiet", 0, "session.started", "quiet-0")
	rr.post(t, token, pending)
	rr.post(t, token, quiet)
	assert.ElementsMatch(t, []string{"pending-req", "quiet-0"}, waitApplied(t, sink, 2))
	addr := rr.addr
	rr.stop()
	require.Error(t, waitDisconnected(t, sink))
	rr2 := startRealRelay(t, addr, token)
	waitConnected(t, sink)
	rr2.post(t, token, pending)
	rr2.post(t, token, event(t, "s live", 1, "attention.resolved", "live-1"))
	assert.Equal(t, []string{"live-1"}, waitApplied(t, sink, 1), "the re-sent request is not applied twice")
	rr2.post(t, token, event(t, "s quiet", 5, "attention.requested", "quiet-5"))
	assert.Equal(t, []string{"quiet-5"}, waitApplied(t, sink, 1))
	select {
	case ex := <-sink.exhausted:
		assert.Equal(t, exhaustion{"s quiet", aep.Position{Seq: 5}}, ex, "the quiet session's history may be lost")
	case <-testTimeout():
		t.Fatal("no ReplayExhausted after the relay lost its history")
	}
	assert.Empty(t, sink.exhausted, "none for the session whose position the new relay holds")
	assert.Empty(t, sink.duplicates())
}
