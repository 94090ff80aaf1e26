package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aepforms/aepforms/internal/agent"
)

// Sizes of BenchmarkOperators; with -short (make bench-smoke) a round
// is benchShortOperators operators on benchShortCards cards, which checks
// the same things in a fraction of the time.
const (
	benchOperators      = 100
	benchCards          = 1000
	benchShortOperators = 10
	benchShortCards     = 100
	// benchRaceEvery: every benchRaceEvery-th card is also taken by a
	// second operator, who races the first with another form token. (A
	// refused post re-renders the whole page, about 50 ms of CPU with
	// 1000 cards, so racing every card takes the round past a minute on
	// two cores; docs/PERFORMANCE.md has that figure.)
	benchRaceEvery = 10
)

// BenchmarkOperators has 100 operators answer 1000 pending deploy forms
// of the demo agent at once, over HTTP as browsers would, and checks
// with the agent's record that no answer was lost and none duplicated.
// Each iteration is one round on a fresh agent:
//
//  1. (untimed) the agent asks 1000 forms in 1000 sessions; a browser
//     follows /push until all 1000 cards are pending, then leaves;
//  2. (untimed) each card is taken by one operator (card c by operator
//     c mod 100) and every tenth also by a second one (operator
//     (c+50) mod 100), so 100 cards are raced by two tabs with different
//     form tokens; each operator (its own HTTP client) fetches the
//     fragments of its cards;
//  3. (timed) all 100 operators post their forms at once, in their own
//     shuffled order, every fourth form twice (a double click: the same
//     token), and the round ends when the agent has answered all 1000.
//
// Then the UI is stopped (no command can still be on its way) and the
// agent's record must hold, for every card, exactly one command, from
// the one operator whose post was taken (303 with a new token), carrying
// that operator's answer, accepted, each (source, id) arriving once or,
// if resent after an ack window of silence, with identical bytes. Posts
// refused because the other tab won (409) or the settled card was
// already evicted from the inbox (404) send nothing.
//
// Metrics: lost and duplicated (must be 0), posts, taken (303 with a
// new token), repeats (303 for a double click), refused (409), gone
// (404), resends (extra transmissions the agent saw), post-to-agent-p50/
// p99-ms (taken post to the agent's receipt of the command), answers/s,
// and setup-push-reloads and -resumes (how often the setup's browser had
// to reload the page or resume its stream while the 1000 cards arrived).
func BenchmarkOperators(b *testing.B) {
	for range b.N {
		b.StopTimer()
		// The undo window at 0: every answer leaves at once, as before Undo.
		s := benchStartStack(b, benchStackOptions{relayEnv: map[string]string{"AEP_MAX_SESSIONS": "5000"}, uiArgs: append(slices.Clone(benchAllInFull), "--undo-window", "0")})
		if testing.Short() {
			benchOperatorsRound(b, s, benchShortOperators, benchShortCards)
		} else {
			benchOperatorsRound(b, s, benchOperators, benchCards)
		}
		s.stop()
	}
}

// benchPosted is one post an operator made.
type benchPosted struct {
	operator, card int
	status         int
	repeat         bool // the same form posted again
	at             time.Time
}

// benchOperatorsRound is one round of nOps operators on nCards cards.
func benchOperatorsRound(b *testing.B, s *benchStack, nOps, nCards int) {
	scenarios := make([]string, nCards)
	for i := range scenarios {
		scenarios[i] = agent.ScenarioDeploy
	}
	ag, stopAgent := s.benchStartAgent(b, scenarios)
	defer stopAgent()
	asked := benchAskedAll(b, ag, nCards)
	br := s.benchOpenBrowser(b)
	br.await(b, fmt.Sprintf("%d cards pending", nCards), func(cards map[string]*benchCardView) bool {
		for _, a := range asked {
			if c := cards[string(benchCardID(a))]; c == nil || c.state != "pending" {
				return false
			}
		}
		return true
	})
	br.close()
	reloads, resumes := br.stats()
	b.ReportMetric(float64(reloads), "setup-push-reloads")
	b.ReportMetric(float64(resumes), "setup-push-resumes")

	// Card c goes to operator c%100, and, when raced, (c+50)%100.
	type job struct {
		card         int
		action, name string
		form         url.Values
	}
	jobs := make([][]job, nOps)
	clients := make([]*http.Client, nOps)
	for o := range clients {
		clients[o] = &http.Client{
			Transport:     &http.Transport{MaxIdleConnsPerHost: 4},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	var fetch sync.WaitGroup
	errs := make(chan error, nOps)
	for o := range nOps {
		fetch.Go(func() {
			for c := range nCards {
				raced := c%benchRaceEvery == 0 && (c+nOps/2)%nOps == o
				if c%nOps != o && !raced {
					continue
				}
				id := string(benchCardID(asked[c]))
				resp, err := clients[o].Get(s.uiURL + "cards/" + id)
				if err != nil {
					errs <- err
					return
				}
				doc, err := goquery.NewDocumentFromReader(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				name := fmt.Sprintf("op%d-card%d", o, c)
				action, form, err := benchFillDeploy(doc.Selection, s.uiURL, name)
				if err != nil {
					errs <- fmt.Errorf("operator %d, card %d: %w", o, c, err)
					return
				}
				jobs[o] = append(jobs[o], job{card: c, action: action, name: name, form: form})
			}
			rand.Shuffle(len(jobs[o]), func(i, j int) { jobs[o][i], jobs[o][j] = jobs[o][j], jobs[o][i] })
		})
	}
	fetch.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	b.StartTimer()
	start := time.Now()
	posted := make([][]benchPosted, nOps)
	var post sync.WaitGroup
	postErrs := make(chan error, nOps)
	for o := range nOps {
		post.Go(func() {
			for n, j := range jobs[o] {
				times := 1
				if n%4 == 0 {
					times = 2
				}
				for k := range times {
					at := time.Now()
					status, err := benchPost(clients[o], s.origin, s.uiURL, j.action, j.form)
					if err != nil {
						postErrs <- fmt.Errorf("operator %d: %w", o, err)
						return
					}
					posted[o] = append(posted[o], benchPosted{operator: o, card: j.card, status: status, repeat: k > 0, at: at})
				}
			}
		})
	}
	post.Wait()
	close(postErrs)
	for err := range postErrs {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	err := ag.Until(ctx, func() bool {
		answered := 0
		for _, ss := range ag.Sessions() {
			for _, r := range ss.Requests {
				if r.State == agent.StateAnswered {
					answered++
				}
			}
		}
		return answered >= nCards
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Errorf("not every request was answered within %v: %v", benchWait, err)
	}
	s.stopUI() // nothing more can be sent
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	benchCheckOperators(b, ag, asked, posted, elapsed)
}

// benchCheckOperators checks the agent's record against the posts and
// reports the round's metrics.
func benchCheckOperators(b *testing.B, ag *agent.Agent, asked []benchAsked, posted [][]benchPosted, elapsed time.Duration) {
	b.Helper()
	cardOf := map[string]int{} // request id -> card index
	for c, a := range asked {
		cardOf[a.request.ID] = c
	}
	winner := make([]int, len(asked)) // the operator whose post was taken, -1 when none
	takenAt := make([]time.Time, len(asked))
	for c := range winner {
		winner[c] = -1
	}
	var posts, taken, repeats, refused, gone, other int
	for _, ps := range posted {
		for _, p := range ps {
			posts++
			switch {
			case p.status == http.StatusSeeOther && p.repeat:
				repeats++
			case p.status == http.StatusSeeOther:
				taken++
				if winner[p.card] >= 0 {
					b.Errorf("card %d: the posts of operators %d and %d were both taken", p.card, winner[p.card], p.operator)
				}
				winner[p.card], takenAt[p.card] = p.operator, p.at
			case p.status == http.StatusConflict:
				refused++
			case p.status == http.StatusNotFound:
				gone++
			default:
				other++
				b.Errorf("operator %d, card %d: status %d, want 303, 409 or 404", p.operator, p.card, p.status)
			}
		}
	}

	perCard := make([][]agent.Received, len(asked))
	resends := 0
	var latency benchLatencies
	for _, r := range ag.Record() {
		c, ok := cardOf[r.Subject]
		if !ok {
			b.Errorf("command %s answers %q, which no card asked", r.ID, r.Subject)
			continue
		}
		perCard[c] = append(perCard[c], r)
		resends += r.Count - 1
		if r.Differing > 0 {
			b.Errorf("card %d: command %s arrived %d times with different bytes", c, r.ID, r.Differing)
		}
	}
	lost, duplicated := 0, 0
	for c, rs := range perCard {
		switch {
		case len(rs) == 0:
			lost++
			b.Errorf("card %d: no command reached the agent (taken from operator %d)", c, winner[c])
			continue
		case len(rs) > 1:
			duplicated += len(rs) - 1
			b.Errorf("card %d: %d distinct commands reached the agent, want 1", c, len(rs))
		}
		r := rs[0]
		if r.Decision.Outcome != agent.OutcomeAccepted {
			b.Errorf("card %d: the agent decided %+v, want accepted", c, r.Decision)
		}
		if winner[c] < 0 {
			b.Errorf("card %d: a command arrived but no post was taken", c)
			continue
		}
		want := fmt.Sprintf(`"name":"op%d-card%d"`, winner[c], c)
		if !bytes.Contains(r.Raw, []byte(want)) {
			b.Errorf("card %d: the command holds %s, want the taken post's answer (%s)", c, r.Raw, want)
		}
		latency = append(latency, r.First.Sub(takenAt[c]))
	}
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(duplicated), "duplicated")
	b.ReportMetric(float64(posts), "posts")
	b.ReportMetric(float64(taken), "taken")
	b.ReportMetric(float64(repeats), "repeats")
	b.ReportMetric(float64(refused), "refused")
	b.ReportMetric(float64(gone), "gone")
	b.ReportMetric(float64(resends), "resends")
	benchReportLatency(b, "post-to-agent", latency)
	b.ReportMetric(float64(len(asked))/elapsed.Seconds(), "answers/s")
}
