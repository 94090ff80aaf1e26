package routing

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/relay"
)

// startRelay serves an embedded relay with token until the test ends.
func startRelay(t *testing.T, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := relay.DefaultConfig()
	cfg.Token = token
	r := relay.New(cfg)
	srv := &http.Server{Handler: r.Handler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// held reads the relay's buffered history (live=0), its events' JSON.
func held(t *testing.T, base, token string) []*aep.Event {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/stream?from=all&live=0", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []*aep.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			e, err := aep.Decode([]byte(data))
			require.NoError(t, err)
			out = append(out, e)
		}
	}
	return out
}

// Each delivery is said on the relay as attention.routed (AEP-0002
// §7.3): this UI's own source and agent, the request's session, subject
// and cause its id, no seq, {to, via}, valid against the schema; the
// relay keeps it in the request's session.
func TestDeliveryIsRoutedOnTheWire(t *testing.T) {
	t.Parallel()
	base := startRelay(t, "relay-token-0123456789")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := NewWire(ctx, WireConfig{RelayURL: base, Token: "relay-token-0123456789", Source: "aep://ui.example/aepforms", Agent: "aepforms-ui"})
	c := inbox.Card{ID: "c1", Key: inbox.RequestKey{Source: testSource, Session: "deploy-1", RequestID: "req-1"}, EventID: "req-1"}
	w.Routed(c, SurfaceWebPush)
	w.Routed(c, SurfaceWebhook)
	w.Wait()

	events := held(t, base, "relay-token-0123456789")
	require.Len(t, events, 2)
	var to []string
	for _, e := range events {
		require.NoError(t, aeptest.ValidateEvent(e), "valid against the envelope and attention.routed schemas")
		assert.Equal(t, "attention.routed", e.Type())
		assert.Equal(t, "deploy-1", e.Session())
		assert.Equal(t, "req-1", e.Subject())
		_, hasSeq := e.Member("seq")
		assert.False(t, hasSeq, "a foreign emitter's event has no seq")
		var d aep.Routed
		require.NoError(t, e.DecodeData(&d))
		assert.Equal(t, Via, d.Via)
		to = append(to, d.To)
	}
	assert.ElementsMatch(t, []string{SurfaceWebPush, SurfaceWebhook}, to)
}

// A relay that hangs through a burst of deliveries (more than the 64
// posts that run at once) gets each attention.routed once it answers
// again: the posts past the limit wait their turn, none is dropped.
func TestRoutedPastTheLimitWaitsItsTurn(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	got := make(chan string, 128)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		<-release
		e, err := aep.Decode(b)
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		got <- e.ID()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := NewWire(ctx, WireConfig{RelayURL: srv.URL, Source: "aep://ui.example/aepforms", Agent: "aepforms-ui", Logger: quietLog()})
	const n = 70
	for i := range n {
		c := inbox.Card{ID: inbox.CardID("c" + strconv.Itoa(i)), Key: inbox.RequestKey{Source: testSource, Session: "deploy-1", RequestID: "req-" + strconv.Itoa(i)}, EventID: "req-" + strconv.Itoa(i)}
		w.Routed(c, SurfaceWebhook)
	}
	once.Do(func() { close(release) })
	ids := map[string]bool{}
	for len(ids) < n {
		select {
		case id := <-got:
			ids[id] = true
		case <-time.After(30 * time.Second):
			require.FailNow(t, "not every attention.routed reached the relay", "got %d of %d", len(ids), n)
		}
	}
	w.Wait()
}
