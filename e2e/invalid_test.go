package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/feed"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// Behind an external relay that passes on whatever it is given, every
// event the feed reads is checked against the envelope rules: a fake
// relay serving invalid envelopes yields malformed cards and counted
// events, never a form.
func TestFakeRelayServingInvalidEnvelopesYieldsNoForm(t *testing.T) {
	t.Parallel()
	request := func(id, member string) string {
		env := map[string]string{"aep": `"0.1"`, "time": `"2026-07-03T10:00:00Z"`, "seq": "1"}
		k, v, _ := strings.Cut(member, "=")
		env[k] = v
		extra := ""
		if e, ok := env["epoch"]; ok {
			extra = `,"epoch":` + e
		}
		capture := `"full"`
		if c, ok := env["capture"]; ok {
			capture = c
		}
		return `{"aep":` + env["aep"] + `,"id":"` + id + `","type":"attention.requested","time":` + env["time"] +
			`,"source":"aep://evil/emitter","agent":"evil","session":"s-` + id + `","seq":` + env["seq"] + extra +
			`,"capture":` + capture + `,"data":{"kind":"permission","prompt":"Delete prod?","options":[{"id":"y","label":"Yes"}]}}`
	}
	bad := map[string]string{
		"r-aep":     request("r-aep", `aep="9.9"`),
		"r-capture": request("r-capture", `capture="ultra"`),
		"r-time":    request("r-time", `time="yesterday"`),
		"r-epoch":   request("r-epoch", `epoch=-1`),
		"r-seq":     request("r-seq", `seq=-1`),
	}
	lines := []string{
		// An invalid answer to a valid request settles nothing.
		request("r-ok", ""),
		`{"aep":"0.1","id":"a1","type":"attention.resolved","subject":"r-ok","time":"yesterday","source":"aep://evil/emitter",` +
			`"agent":"evil","session":"s-r-ok","seq":2,"data":{"resolution":"auto"}}`,
	}
	for _, id := range []string{"r-aep", "r-capture", "r-time", "r-epoch", "r-seq"} {
		lines = append(lines, bad[id])
	}
	lines = append(lines, request("r-marker", ""))

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, l := range lines {
			fmt.Fprintf(w, "event: aep\ndata: %s\n\n", l)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)

	in := inbox.New(inbox.Options{})
	sub := in.Subscribe(64)
	t.Cleanup(sub.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	fc := feed.New(feed.Config{RelayURL: srv.URL, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	go func() { done <- fc.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	marker := inbox.RequestKey{Source: "aep://evil/emitter", Session: "s-r-marker", RequestID: "r-marker"}.CardID()
	deadline := time.After(10 * time.Second)
	for {
		if _, ok := in.Card(marker); ok {
			break
		}
		select {
		case <-sub.C():
		case <-deadline:
			t.Fatal("the feed did not deliver the events")
		}
	}

	ok, found := in.Card(inbox.RequestKey{Source: "aep://evil/emitter", Session: "s-r-ok", RequestID: "r-ok"}.CardID())
	require.True(t, found)
	assert.Equal(t, inbox.StatePending, ok.State, "an invalid resolution settles nothing")
	assert.EqualValues(t, 6, in.Status().Invalid, "five invalid requests and one invalid resolution")
	for id := range bad {
		c, found := in.Card(inbox.RequestKey{Source: "aep://evil/emitter", Session: "s-" + id, RequestID: id}.CardID())
		require.True(t, found, "%s is shown", id)
		assert.NotEmpty(t, c.Malformed, id)
		v := view.Card(c, view.Options{Now: time.Now(), Token: "t", Reachable: inbox.ReachConnected})
		assert.Nil(t, v.Form, "%s offers no form", id)
		assert.Equal(t, "malformed", v.State.Kind, id)
	}
}
