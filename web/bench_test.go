package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// benchPageCards is how many pending cards BenchmarkPageRender shows.
const benchPageCards = 1000

// BenchmarkPageRender measures a full page render (GET / through the
// server's handler, middleware included, into an httptest recorder: the
// 50 most urgent in full and 500 rows; and, to compare, every request in
// full) with 1000 pending cards of mixed kinds (forms of every field kind, with and
// without Other, long and HTML-looking prompts, capture metadata,
// deadlines; permission, input, review, prompt-only and unknown-kind
// requests) across 20 agents and 100 sessions, as the inbox holds them
// after the feed applied their events. Target: under 50 ms per render.
//
// Its baselines, run beside it:
//
//   - cards: inbox.Cards alone, the read every render starts with (the
//     floor no renderer can go under);
//   - html-template: the same cards' text (prompt, field labels, choice
//     and option labels) written through html/template as a plain list:
//     what the least a server-rendered page of the same agent text costs
//     with the standard library's escaping, without forms or provenance.
//
// Metrics: ms/render and page-KiB (the page's size).
func BenchmarkPageRender(b *testing.B) {
	in := benchInbox(b, benchPageCards)
	for _, tc := range []struct {
		name        string
		cfg         Config
		cards, rows int
	}{
		// The page as served: the 50 most urgent in full, 500 rows.
		{"page", Config{}, view.DefaultPageCards, view.DefaultPageRows},
		// Every request in full, as the page was before it had rows.
		{"page-all-in-full", Config{PageCards: benchPageCards}, benchPageCards, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := NewServer(tc.cfg, Deps{Inbox: in, Submitter: benchSubmitter{}, Roster: benchRoster{}})
			size := 0
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
				w := &benchWriter{header: http.Header{}}
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("GET /: status %d, want 200", w.status)
				}
				size = w.n
			}
			doc := benchPageDoc(b, h)
			if n := doc.Find(`article[data-card]`).Length(); n != tc.cards {
				b.Fatalf("the page shows %d cards, want %d", n, tc.cards)
			}
			if n := doc.Find(`[data-testid="row"]`).Length(); n != tc.rows {
				b.Fatalf("the page shows %d rows, want %d", n, tc.rows)
			}
			benchReportRender(b, size)
		})
	}
	b.Run("cards", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := len(in.Cards(inbox.Query{})); n != benchPageCards {
				b.Fatalf("Cards: %d, want %d", n, benchPageCards)
			}
		}
		benchReportRender(b, 0)
	})
	b.Run("html-template", func(b *testing.B) {
		size := 0
		b.ReportAllocs()
		for b.Loop() {
			var sb strings.Builder
			if err := benchListTemplate.Execute(&sb, in.Cards(inbox.Query{})); err != nil {
				b.Fatal(err)
			}
			size = sb.Len()
		}
		benchReportRender(b, size)
	})
}

// benchReportRender reports ms per render and the page size.
func benchReportRender(b *testing.B, size int) {
	b.Helper()
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "ms/render")
	b.ReportMetric(float64(size)/1024, "page-KiB")
}

// benchWriter is a ResponseWriter that counts the body and keeps
// nothing, so the figure is the server's work (a recorder would add a
// copy of the whole page into its own growing buffer).
type benchWriter struct {
	header http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}

// benchPageDoc renders the page once more and parses it.
func benchPageDoc(tb testing.TB, h http.Handler) *goquery.Document {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		tb.Fatalf("parse the page: %v", err)
	}
	return doc
}

// benchListTemplate is the html-template baseline: every card's text as
// a plain list.
var benchListTemplate = template.Must(template.New("list").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>inbox</title></head><body><ul>
{{range .}}<li id="{{.ID}}"><p>{{.Agent}} {{.Key.Session}} {{.Request.Kind}}</p><p>{{.Request.Prompt}}</p>
{{range .Request.Fields}}<p>{{.Label}}{{range .Choices}} {{.Label}}{{end}}</p>{{end}}
{{range .Request.Options}}<p>{{.Label}}</p>{{end}}</li>
{{end}}</ul></body></html>`))

// benchSubmitter accepts every submission (the page only needs one to
// exist, so forms render with their submit controls).
type benchSubmitter struct{}

func (benchSubmitter) Submit(context.Context, inbox.Submission) error { return nil }

// benchRoster says every agent is connected.
type benchRoster struct{}

func (benchRoster) Reach(string) inbox.Reach { return inbox.ReachConnected }

// benchInbox returns an inbox holding n pending requests of mixed kinds,
// applied as the feed applies events.
func benchInbox(tb testing.TB, n int) *inbox.Inbox {
	tb.Helper()
	in := inbox.New(inbox.Options{})
	start := time.Now().Add(-time.Hour)
	seq := map[string]int64{}
	for i := range n {
		agentName := fmt.Sprintf("agent-%02d", i%20)
		session := fmt.Sprintf("s-%03d", i%100)
		req, capture := benchRequest(i, start)
		ev, err := aep.Build(aep.Envelope{
			ID: fmt.Sprintf("r-%05d", i), Type: "attention.requested",
			Time:   start.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339),
			Source: "aep://bench.test/agent/" + agentName + "/session/" + session,
			Agent:  agentName, Session: session, Run: "run-1",
			Seq: aep.Int64(seq[session]), Epoch: aep.Int64(0),
			Severity: "notice", Capture: capture, Data: req,
		})
		if err != nil {
			tb.Fatal(err)
		}
		seq[session]++
		in.Apply(ev)
	}
	if got := in.Status().Pending; got != n {
		tb.Fatalf("the inbox holds %d pending cards, want %d", got, n)
	}
	return in
}

// benchRequest is request i of the mix and the capture it is sent at.
func benchRequest(i int, start time.Time) (aep.Request, string) {
	lo, hi := 1.0, 20.0
	regions := make([]aep.Choice, 12)
	for j := range regions {
		regions[j] = aep.Choice{ID: fmt.Sprintf("r%d", j), Label: fmt.Sprintf("Region %d", j)}
	}
	control := []string{aep.ViaControl}
	switch i % 10 {
	case 0, 1, 2: // the golden deploy form
		r := samples.DeployForm()
		r.Prompt = fmt.Sprintf("Configure deployment %d", i)
		return r, "full"
	case 3: // every field kind, a long HTML-looking prompt, a deadline
		return aep.Request{Kind: aep.KindForm, RespondVia: control,
			Prompt:    strings.Repeat("Review <b>this</b> & that before the release.\n", 12),
			ExpiresAt: start.Add(2*time.Hour + time.Duration(i)*time.Second).UTC().Format(time.RFC3339),
			Fields: []aep.FieldSpec{
				{ID: "service", Type: aep.FieldString, Label: "Service name", Required: true},
				{ID: "replicas", Type: aep.FieldNumber, Label: "Replicas", Required: true, Min: &lo, Max: &hi},
				{ID: "agree", Type: aep.FieldBoolean, Label: "I have read the checklist", Required: true},
				{ID: "features", Type: aep.FieldSelect, Label: "Features", Multi: true, Other: true, Choices: regions[:3]},
				{ID: "region", Type: aep.FieldSelect, Label: "Primary region", Required: true, Choices: regions},
				{ID: "notes", Type: aep.FieldString, Label: "Notes <i>optional</i>"},
			}}, "full"
	case 4: // capture metadata: placeholders
		return aep.Request{Kind: aep.KindForm, Prompt: "[form prompt withheld]", RespondVia: control,
			Fields: []aep.FieldSpec{
				{ID: "q1", Type: aep.FieldSelect, Label: "q1", Choices: []aep.Choice{{ID: "a", Label: "a"}, {ID: "b", Label: "b"}}},
				{ID: "q2", Type: aep.FieldSelect, Label: "q2", Multi: true, Choices: []aep.Choice{{ID: "a", Label: "a"}, {ID: "b", Label: "b"}}},
			}}, "metadata"
	case 5:
		return aep.Request{Kind: aep.KindPermission, Prompt: fmt.Sprintf("Allow Bash to run make release-%d?", i),
			Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}, "full"
	case 6:
		return aep.Request{Kind: aep.KindInput, Prompt: "Which branch should the fix be merged into?",
			Options: []aep.Option{{ID: "main", Label: "main"}, {ID: "release", Label: "release/2.4"}}}, "full"
	case 7:
		return aep.Request{Kind: aep.KindReview, Prompt: "Review the generated migration.",
			Options: []aep.Option{{ID: "approve", Label: "Approve"}, {ID: "reject", Label: "Request changes"}}}, "full"
	case 8: // a form without fields: free-text reply
		return aep.Request{Kind: aep.KindForm, Prompt: "What should the release notes emphasise?", RespondVia: control}, "full"
	default: // a kind the UI does not know: free-text reply
		return aep.Request{Kind: aep.KindOther, Prompt: "The fixtures differ. Keep the new ones, or explain what to do instead."}, "full"
	}
}
