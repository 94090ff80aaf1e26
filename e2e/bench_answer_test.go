package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
	"github.com/aepforms/aepforms/internal/inbox"
)

// benchUndoWindow is the UI's --undo-window in BenchmarkAnswerLatency.
var benchUndoWindow = flag.Duration("undo-window", 0, "the UI's --undo-window in BenchmarkAnswerLatency (0: answers leave at once)")

// BenchmarkAnswerLatency measures, per iteration, one answer through the
// UI beside one through a bare WebSocket sender, to the same demo agent,
// each on its own pending deploy form (the golden s_form's fields):
//
//   - ui: from the form post (POST /cards/{id}/answer with the rendered
//     form's token, as a browser submits it) until the browser following
//     /push first shows the card accepted (data-state "accepted", or
//     "answered" when the agent's outcome overtook the ack's rendering);
//   - ws: a bare control sender on the relay's socket writes the same
//     kind of control.attention.respond (same answer values) and reads
//     its control.accepted: the protocol's own round trip;
//   - ws-sub: the bare sender's ack subscription round trip, which the
//     UI's respond path makes once per command inside its time (the bare
//     ws figure excludes it).
//
// All 2 x b.N forms are asked before the timer starts, and sampling
// starts once the browser shows every one pending with its agent
// reachable and the roster refreshes their sessions caused have been
// applied (see benchRosterSettled), so no sample shares the cores with
// a republish of other cards. The two paths alternate order each
// iteration, and each waits for its card to settle (answered) before
// the next starts. Metrics: ui-, ws- and
// ws-sub-p50/p99-ms, fsync-p50/p99-ms (a 4 KiB write and fsync beside
// the journal, between samples: the disk's floor), overhead-p50-ms and
// overhead-p99-ms (ui - ws at each quantile; targets 1 ms and 2 ms +
// fsync p99),
// push-reloads (page loads the server asked for) and push-resumes
// (streams the server ended), both counted while samples ran; both
// should be 0, or the ui figures include a reconnect.
//
// The UI's undo window is 0 (-undo-window, --undo-window's): each answer
// leaves at once, so the figures compare with the bare round trip and
// with the runs before Undo; with a window each ui figure is the window
// plus this time.
func BenchmarkAnswerLatency(b *testing.B) {
	args := append(slices.Clone(benchAllInFull), "--undo-window", benchUndoWindow.String())
	s := benchStartStack(b, benchStackOptions{relayEnv: map[string]string{"AEP_MAX_SESSIONS": "5000"}, uiArgs: args})
	br := s.benchOpenBrowser(b)
	snd := s.benchDialSender(b)
	asked, _ := s.benchAgentBatch(b, br, 2*b.N)
	s.benchRosterSettled(b, br)
	reloads0, resumes0 := br.stats()
	probe, err := os.Create(filepath.Join(b.TempDir(), "fsync-probe"))
	if err != nil {
		b.Fatal(err)
	}
	defer probe.Close()
	var ui, ws, wsSub, fsync benchLatencies
	b.ResetTimer()
	for i := range b.N {
		viaUI, viaWS := asked[2*i], asked[2*i+1]
		answer := func() { ui = append(ui, s.benchAnswerViaUI(b, br, viaUI, i)) }
		send := func() {
			r := snd.respond(b, viaWS, benchDeployAnswer(i))
			ws, wsSub = append(ws, r.ack), append(wsSub, r.subscribe)
			br.await(b, "the sender's card answered", func(cards map[string]*benchCardView) bool {
				c := cards[string(benchCardID(viaWS))]
				return c != nil && c.state == "answered"
			})
		}
		if i%2 == 0 {
			answer()
			send()
		} else {
			send()
			answer()
		}
		fsync = append(fsync, benchFsync(b, probe))
	}
	b.StopTimer()
	reloads1, resumes1 := br.stats()
	benchReportLatency(b, "ui", ui)
	benchReportLatency(b, "ws", ws)
	benchReportLatency(b, "ws-sub", wsSub)
	benchReportLatency(b, "fsync", fsync)
	b.ReportMetric(benchMS(ui.quantile(0.50)-ws.quantile(0.50)), "overhead-p50-ms")
	b.ReportMetric(benchMS(ui.quantile(0.99)-ws.quantile(0.99)), "overhead-p99-ms")
	b.ReportMetric(float64(reloads1-reloads0), "push-reloads")
	b.ReportMetric(float64(resumes1-resumes0), "push-resumes")
}

// benchFsync writes 4 KiB to f and syncs it: the disk's own floor under a
// journal commit that survives power loss (synchronous=FULL syncs the
// WAL once per commit), on the file system of the UI's journal (both are
// in the benchmark's temporary directory), timed between samples.
func benchFsync(b *testing.B, f *os.File) time.Duration {
	b.Helper()
	start := time.Now()
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// benchRosterSettled lets the roster refreshes of newly started sessions
// pass before a measurement. A roster change republishes only the open
// cards of sessions whose reachability changed, so there is no re-render
// of every card to wait for; instead one more demo agent asks one form,
// and its card shown reachable means the respond path has applied a
// roster reply asked for after every earlier session started (replies
// come in order on its one connection), and with it every earlier one.
func (s *benchStack) benchRosterSettled(tb testing.TB, br *benchBrowser) {
	tb.Helper()
	s.benchAgentBatch(tb, br, 1)
}

// benchAgentBatch starts a demo agent asking n deploy forms and waits
// until the browser shows every one pending with its agent connected.
func (s *benchStack) benchAgentBatch(tb testing.TB, br *benchBrowser, n int) ([]benchAsked, func()) {
	tb.Helper()
	scenarios := make([]string, n)
	for i := range scenarios {
		scenarios[i] = agent.ScenarioDeploy
	}
	ag, stop := s.benchStartAgent(tb, scenarios)
	asked := benchAskedAll(tb, ag, n)
	br.await(tb, fmt.Sprintf("%d deploy cards pending and reachable", n), func(cards map[string]*benchCardView) bool {
		for _, a := range asked {
			c := cards[string(benchCardID(a))]
			if c == nil || c.state != "pending" || c.reach != "yes" {
				return false
			}
		}
		return true
	})
	return asked, stop
}

// benchCardID is the UI's card id for a request the agent asked.
func benchCardID(a benchAsked) inbox.CardID {
	return inbox.RequestKey{Source: a.session.Source, Session: a.session.ID, RequestID: a.request.ID}.CardID()
}

// benchDeployAnswer is the answer both paths give sample i's deploy form:
// the UI's post (benchFillDeploy) maps to exactly these values.
func benchDeployAnswer(i int) aep.Answer {
	return aep.Answer{Values: aep.Values{
		"name": fmt.Sprintf("svc-%d", i), "staged": false, "regions": []any{"1"}, "db": "2",
	}}
}

// benchAnswerViaUI answers the card of a as an operator's browser does
// and returns the time from the post until the browser showed it
// accepted; it then waits for the card to settle.
func (s *benchStack) benchAnswerViaUI(tb testing.TB, br *benchBrowser, a benchAsked, i int) time.Duration {
	tb.Helper()
	id := string(benchCardID(a))
	action, form := s.benchDeployForm(tb, id, fmt.Sprintf("svc-%d", i))
	t0 := time.Now()
	if status := s.benchPostForm(tb, action, form); status != http.StatusSeeOther {
		tb.Fatalf("answer %s: status %d, want 303", id, status)
	}
	var refused string
	br.await(tb, "card "+id+" accepted", func(cards map[string]*benchCardView) bool {
		c := cards[id]
		if c != nil && (c.state == "rejected" || c.state == "failed") {
			refused = c.state
			return true
		}
		return c != nil && (!c.first["accepted"].IsZero() || !c.first["answered"].IsZero())
	})
	if refused != "" {
		tb.Fatalf("answer %s: the card shows %s, want accepted", id, refused)
	}
	t1, _ := br.firstSeen(id, "accepted", "answered")
	br.await(tb, "card "+id+" answered", func(cards map[string]*benchCardView) bool {
		c := cards[id]
		return c != nil && c.state == "answered"
	})
	return t1.Sub(t0)
}

// benchDeployForm fetches card id's fragment (what push delivers and the
// page shows) and fills its deploy form as an operator would: the
// service name typed, "staging first" left unchecked, region us-east
// (choice 0) ticked, database SQLite (choice 1) chosen. It returns the
// form's action URL and the fields a browser would post.
func (s *benchStack) benchDeployForm(tb testing.TB, id, name string) (string, url.Values) {
	tb.Helper()
	resp, err := s.client.Get(s.uiURL + "cards/" + id)
	if err != nil {
		tb.Fatalf("GET card %s: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("GET card %s: %s %s", id, resp.Status, b)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		tb.Fatalf("GET card %s: %v", id, err)
	}
	action, form, err := benchFillDeploy(doc.Selection, s.uiURL, name)
	if err != nil {
		tb.Fatalf("card %s: %v", id, err)
	}
	return action, form
}

// benchFillDeploy fills the deploy form in sel (see benchDeployForm).
func benchFillDeploy(sel *goquery.Selection, base, name string) (string, url.Values, error) {
	f := sel.Find(`form[data-testid=answer-form][method=post]`).First()
	if f.Length() == 0 {
		return "", nil, fmt.Errorf("no form to answer with")
	}
	bu, _ := url.Parse(base)
	au, err := bu.Parse(f.AttrOr("action", ""))
	if err != nil {
		return "", nil, err
	}
	want := []struct{ sel, what string }{
		{`input[name=token][type=hidden]`, "the form token"},
		{`[name=f0]`, "the service name entry"},
		{`input[type=checkbox][name=f1]`, "the staging checkbox"},
		{`input[type=checkbox][name=f2][value="0"]`, "the us-east checkbox"},
		{`input[type=radio][name=f3][value="1"]`, "the SQLite radio"},
	}
	for _, w := range want {
		if f.Find(w.sel).Length() != 1 {
			return "", nil, fmt.Errorf("the form has no single %s (%s)", w.what, w.sel)
		}
	}
	v := url.Values{
		"token": {f.Find(`input[name=token]`).AttrOr("value", "")},
		"f0":    {name},
		"f2":    {"0"},
		"f3":    {"1"},
	}
	return au.String(), v, nil
}

// benchPostForm posts form to action as a browser on the UI's page does
// (Origin and Referer the UI's) and returns the status, without
// following a redirect.
func (s *benchStack) benchPostForm(tb testing.TB, action string, form url.Values) int {
	tb.Helper()
	status, err := benchPost(s.client, s.origin, s.uiURL, action, form)
	if err != nil {
		tb.Fatal(err)
	}
	return status
}

// benchPost posts form to action with the given Origin and Referer and
// returns the status, without following a redirect.
func benchPost(client *http.Client, origin, referer, action string, form url.Values) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, fmt.Errorf("post %s: %w", action, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Referer", referer)
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post %s: %w", action, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
