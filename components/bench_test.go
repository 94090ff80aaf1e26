package components

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
	"github.com/aepforms/aepforms/internal/render/view"
)

// BenchmarkPage1000 builds and renders a page of 1000 pending cards, a mix
// of every open sample (the budget: under 50 ms).
func BenchmarkPage1000(b *testing.B) {
	benchPage(b, func(i int, open []inbox.Card) aep.Request { return open[i%len(open)].Request })
}

// BenchmarkPage1000Forms is the worst case: 1000 cards that each hold the
// eight-field form with one field of every kind.
func BenchmarkPage1000Forms(b *testing.B) {
	benchPage(b, func(int, []inbox.Card) aep.Request { return samples.EveryFieldForm() })
}

func benchPage(b *testing.B, req func(i int, open []inbox.Card) aep.Request) {
	var open []inbox.Card
	for _, c := range sampleCards() {
		if c.State.Open() && c.Submission == nil {
			open = append(open, c)
		}
	}
	cards := make([]inbox.Card, 1000)
	for i := range cards {
		c := sampleCard("c"+strconv.Itoa(i), "agent-"+strconv.Itoa(i%7), "s_"+strconv.Itoa(i%31), req(i, open))
		c.ExpiresAt = sampleNow.Add(time.Duration(i) * time.Second)
		cards[i] = c
	}
	// Prompts are read as Markdown once per text, as the server does
	// (web's pages keep one cache for every page and push render).
	opts := view.PageOptions{Now: sampleNow, Token: func(id inbox.CardID) string { return "tok-" + string(id) },
		Prompts: markdown.NewCache(4096)}
	b.ReportAllocs()
	for b.Loop() {
		v := view.Page(cards, inbox.Status{FeedConnected: true}, opts)
		if err := Page(v).Render(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
