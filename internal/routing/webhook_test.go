package routing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A channel slower than the posts asked of it (a chat service that
// hangs, a burst of questions) makes the posts past MaxInFlight wait
// their turn, not vanish: each reminder or escalation the card shows as
// sent reaches the channel once the service answers again.
func TestPostsPastTheLimitWaitTheirTurn(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	got := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		<-release // the service hangs until released
		got <- m.Text
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := NewWebhooks(ctx, WebhookConfig{MaxInFlight: 1, Logger: quietLog()})

	delivered := make(chan bool, 3)
	for _, text := range []string{"one", "two", "three"} {
		assert.True(t, w.Post("oncall", srv.URL+"/hooks/s3cr3t", text, func(ok bool) { delivered <- ok }), "%q is taken", text)
	}
	close(release)
	var texts []string
	for range 3 {
		select {
		case m := <-got:
			texts = append(texts, m)
		case <-time.After(30 * time.Second):
			require.FailNow(t, "not every post reached the channel", "got %v", texts)
		}
	}
	assert.ElementsMatch(t, []string{"one", "two", "three"}, texts)
	for range 3 {
		assert.True(t, <-delivered)
	}
	w.Wait()
}
