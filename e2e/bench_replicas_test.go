//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// BenchmarkReplicaAnswer measures the cost of one answer with three UI
// replicas beside one, in the same run: a relay, a demo agent asking
// b.N permissions, and 1 or 3 serve instances (in process, through
// app.Run) sharing one PostgreSQL journal (pgtest's throwaway server).
// Each iteration reads the card's form from a replica (round robin),
// posts Deny to it and waits until the agent has accepted the command.
// Every replica reads the whole feed, so the extra replicas' cost is
// their share of each answer's events.
//
// Metrics: per answer, ms (wall clock, post to the agent's acceptance)
// and cpu-ms (user + system CPU of this process, which holds the relay,
// the agent, the replicas and the client, over the loop, divided by b.N;
// the PostgreSQL server's own processes are not counted). This machine's
// 2 cores are shared, so cpu-ms is the figure to compare, not
// throughput.
func BenchmarkReplicaAnswer(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas-%d", n), func(b *testing.B) {
			db := pgtest.Need(b).NewDatabase(b)
			uiArgs := []string{"--db", db, "--ack-window", "1m"}
			s := benchStartStack(b, benchStackOptions{relayEnv: map[string]string{"AEP_MAX_SESSIONS": "5000"}, uiArgs: uiArgs})
			uis := []string{s.uiURL}
			for i := 1; i < n; i++ {
				ctx, cancel := context.WithCancel(s.ctx)
				args := append([]string{"serve", "--relay", s.relayURL, "--addr", "127.0.0.1:0"}, uiArgs...)
				addr, wait := benchRunApp(b, ctx, fmt.Sprintf("ui %d", i+1), args,
					map[string]string{"AEP_TOKEN": s.token, "HOME": b.TempDir()}, `aepforms UI listening on (http://[^\s"]+)`)
				b.Cleanup(func() { cancel(); wait() })
				uis = append(uis, addr)
			}
			scenarios := make([]string, b.N)
			for i := range scenarios {
				scenarios[i] = agent.ScenarioPermission
			}
			ag, stop := s.benchStartAgent(b, scenarios)
			defer stop()
			asked := benchAskedAll(b, ag, b.N)
			// Every replica shows every card before the clock starts.
			for _, ui := range uis {
				for _, a := range asked {
					benchReplicaForm(b, s, ui, a.session.ID)
				}
			}
			cpu0 := benchCPU(b)
			b.ResetTimer()
			start := time.Now()
			for i, a := range asked {
				ui := uis[i%len(uis)]
				action, vals := benchReplicaForm(b, s, ui, a.session.ID)
				benchReplicaPost(b, s, ui, action, vals)
				ctx, cancel := context.WithTimeout(context.Background(), benchWait)
				err := ag.Until(ctx, func() bool {
					for _, r := range ag.Record() {
						if r.Session == a.session.ID && r.Decision.Outcome == agent.OutcomeAccepted {
							return true
						}
					}
					return false
				})
				cancel()
				if err != nil {
					b.Fatalf("answer %d: the agent did not accept it: %v", i, err)
				}
			}
			took := time.Since(start)
			b.StopTimer()
			cpu := benchCPU(b) - cpu0
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/answer")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/answer")
		})
	}
}

// benchCPU is this process's user and system CPU time so far.
func benchCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchReplicaForm reads session's open card from the UI at ui and
// returns its answer form's action and the values that press Deny.
func benchReplicaForm(tb testing.TB, s *benchStack, ui, session string) (string, url.Values) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ui+"?session="+url.QueryEscape(session), nil)
		if err != nil {
			tb.Fatal(err)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			tb.Fatalf("page of %s: %v", ui, err)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		f := doc.Find(`form[data-testid="answer-form"]`)
		if f.Length() == 1 {
			vals := url.Values{"token": {f.Find(`input[name="token"]`).AttrOr("value", "")}}
			f.Find("button").Each(func(_ int, bt *goquery.Selection) {
				if strings.TrimSpace(bt.Text()) == "Deny" {
					vals.Set(bt.AttrOr("name", ""), bt.AttrOr("value", ""))
				}
			})
			return f.AttrOr("action", ""), vals
		}
		// Not there yet: this replica's feed is behind (only before the
		// clock starts). Read the page again, within the deadline.
		select {
		case <-ctx.Done():
			tb.Fatalf("%s never showed session %s's form", ui, session)
		default:
		}
	}
}

// benchReplicaPost posts vals to action on the UI at ui and wants 303.
func benchReplicaPost(tb testing.TB, s *benchStack, ui, action string, vals url.Values) {
	tb.Helper()
	u, err := url.Parse(ui)
	if err != nil {
		tb.Fatal(err)
	}
	target := u.ResolveReference(&url.URL{Path: action})
	req, err := http.NewRequest(http.MethodPost, target.String(), strings.NewReader(vals.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := s.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("post to %s: %d, want 303", target, resp.StatusCode)
	}
}
