package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// BenchmarkPushFanOut is the push stream's own cost at fleet scale, in
// process: N browsers (raw /push readers over loopback that only count
// `event: card` lines) follow an inbox as inbox pages do (batches=1:
// with the batch region's counts, one shared summary a second), and each iteration applies one
// new question and waits until every browser has read its card. ns/op is
// the time for one card to reach every browser; us-per-browser divides
// it by N. The readers share the process (and the cores), so compare
// runs of the same N, before and after a change, rather than read the
// figure as serve's alone (e2e's BenchmarkPushFleet puts serve in a
// process of its own). 200 and 1000 browsers; 10 under -short.
func BenchmarkPushFanOut(b *testing.B) {
	fleets := []int{200, 1000}
	if testing.Short() {
		fleets = []int{10}
	}
	for _, n := range fleets {
		b.Run("browsers="+strconv.Itoa(n), func(b *testing.B) { benchPushFanOut(b, n) })
	}
}

func benchPushFanOut(b *testing.B, browsers int) {
	in := inbox.New(inbox.Options{MaxPending: 1 << 20})
	in.FeedState(true, nil)
	srv := httptest.NewServer(NewServer(Config{Heartbeat: time.Hour, WriteTimeout: 30 * time.Second, PushEpoch: "bench"},
		Deps{Inbox: in, Submitter: benchSubmitter{}, Roster: benchRoster{}}))
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: browsers}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var cards atomic.Int64
	arrived := make(chan struct{}, 1)
	ready := make(chan struct{}, browsers)
	for range browsers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/push?batches=1", nil) // as an inbox page: its batch region's counts too
		if err != nil {
			b.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("push: status %d", resp.StatusCode)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			first := true
			for sc.Scan() {
				line := sc.Text()
				if first && line == "event: status" {
					first = false
					ready <- struct{}{}
				}
				if line == "event: card" {
					cards.Add(1)
					select {
					case arrived <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	for range browsers {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			b.Fatal("the browsers did not all connect")
		}
	}
	b.ResetTimer()
	for i := range b.N {
		in.Apply(benchPushQuestion(b, i))
		want := int64(browsers) * int64(i+1)
		deadline := time.After(time.Minute)
		for cards.Load() < want {
			select {
			case <-arrived:
			case <-deadline:
				b.Fatalf("card %d reached %d of %d browsers", i, cards.Load()-want+int64(browsers), browsers)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(browsers), "us-per-browser")
}

// benchPushQuestion is question i of the fan-out benchmark.
func benchPushQuestion(b *testing.B, i int) *aep.Event {
	b.Helper()
	e, err := aep.Build(aep.Envelope{ID: fmt.Sprintf("q%d", i), Type: "attention.requested", Time: "2026-07-03T10:00:00Z",
		Source: "aep://bench/agent", Agent: "bench", Session: "s1", Seq: aep.Int64(int64(i + 1)),
		Data: aep.Request{Kind: aep.KindInput, Prompt: fmt.Sprintf("Deploy build %d to production?", i)}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}
