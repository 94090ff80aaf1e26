package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
)

// In Chromium at 320 and 1280 px, light and dark: the agent's words (the question
// heading, the quoted prompt) are never larger than a form label; an
// unticked radio or checkbox is an outline on the card's own surface (not
// a grey disc that looks disabled), its border contrasting 3:1 with the
// card; the agent's quote stands out from the card (its rule contrasts
// 3:1); and nothing overflows sideways, Markdown code and links included.
func TestLookInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	long := strings.Repeat("x", 120)
	h.ask("s1", "md", aep.Request{Kind: aep.KindForm,
		Prompt: "## Release checklist for **billing-api**\n\nBefore the release:\n\n- [ ] run `" + long + "`\n- [x] changelog\n\n```\n" + long + "\n```\n\nSee [the docs](https://example.com/" + long + ").",
		Fields: []aep.FieldSpec{
			{ID: "env", Type: aep.FieldSelect, Label: "Environment", Choices: []aep.Choice{{ID: "a", Label: "Staging"}, {ID: "b", Label: "Production"}}},
			{ID: "who", Type: aep.FieldSelect, Multi: true, Label: "Who is told", Choices: []aep.Choice{{ID: "a", Label: "SRE"}, {ID: "b", Label: "Product"}}},
		},
		RespondVia: []string{aep.ViaControl}})

	bctx := browsertest.New(t, chromedp.WindowSize(320, 800))
	type look struct {
		Label, Question, Prompt float64 // font sizes, px
		RadioBg, CheckBg, Card  string  // computed background colours
		RadioBorder, QuoteRule  float64 // contrast with the card
		Scroll, Client          int
	}
	for _, v := range []struct {
		width int64
		theme string
	}{{320, "light"}, {320, "dark"}, {1280, "light"}, {1280, "dark"}} {
		theme := fmt.Sprintf("%s at %d px", v.theme, v.width)
		ctx, cancel := chromedp.NewContext(bctx)
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(v.width, 800), chromedp.Navigate(h.url("?theme="+v.theme)), chromedp.WaitVisible(`.card input[type="radio"]`)))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[look](`(() => {
			const cs = s => getComputedStyle(document.querySelector(s));
			const rgb = c => c.match(/[\d.]+/g).slice(0, 3).map(Number);
			const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
			const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
			const card = cs('.card').backgroundColor;
			return {
				label: parseFloat(cs('.field__label').fontSize),
				question: parseFloat(cs('.card__question').fontSize),
				prompt: parseFloat(cs('.prompt').fontSize),
				radioBg: cs('.card input[type="radio"]').backgroundColor,
				checkBg: cs('.card input[type="checkbox"]').backgroundColor,
				card: card,
				radioBorder: contrast(cs('.card input[type="radio"]').borderTopColor, card),
				quoteRule: contrast(cs('.prompt').borderLeftColor, card),
				scroll: document.documentElement.scrollWidth,
				client: document.documentElement.clientWidth,
			};
		})()`))
		cancel()
		require.NoError(t, err, theme)
		assert.LessOrEqual(t, got.Question, got.Label, "%s: the question is no larger than a label", theme)
		assert.LessOrEqual(t, got.Prompt, got.Label, "%s: the prompt is no larger than a label", theme)
		assert.Equal(t, got.Card, got.RadioBg, "%s: an unticked radio is the card's surface inside", theme)
		assert.Equal(t, got.Card, got.CheckBg, "%s: an unticked checkbox is the card's surface inside", theme)
		assert.GreaterOrEqual(t, got.RadioBorder, 3.0, "%s: the radio's outline stands out", theme)
		assert.GreaterOrEqual(t, got.QuoteRule, 3.0, "%s: the quote's rule stands out", theme)
		assert.Equal(t, got.Client, got.Scroll, "%s: nothing overflows sideways", theme)
	}
}
