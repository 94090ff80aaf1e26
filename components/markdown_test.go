package components

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/render/markdown"
	"github.com/aepforms/aepforms/internal/render/view"
)

// mdAllowed is every element the question and the prompt may yield, with
// the attributes each may carry: the components' own set. Anything else
// coming out of an agent's prompt is a hole.
var mdAllowed = map[string]map[string]bool{
	"h3":     {"class": true, "id": true},
	"span":   {"class": true, "data-testid": true, "aria-hidden": true},
	"bdi":    {"class": true, "data-testid": true},
	"p":      {"class": true, "dir": true},
	"strong": {},
	"em":     {},
	"code":   {},
	"pre":    {"class": true, "dir": true},
	"ul":     {"class": true},
	"ol":     {"class": true, "start": true},
	"li":     {"class": true, "dir": true},
	"div":    {"class": true},
	"br":     {},
	"a":      {"href": true, "rel": true, "target": true},
}

// checkPromptHTML fails when the question's and prompt's HTML holds an
// element or attribute outside mdAllowed, a link to anything but an
// absolute http, https or mailto URL, a link without its rel, or a control
// character in text (text.go's rule).
func checkPromptHTML(t *testing.T, src, out string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(out))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			require.ErrorIs(t, z.Err(), io.EOF, "prompt %q", src)
			return
		case html.TextToken:
			for _, r := range string(z.Text()) {
				if unicode.IsControl(r) && r != '\n' && r != '\t' {
					t.Fatalf("prompt %q: control character %U in text", src, r)
				}
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs, ok := mdAllowed[tok.Data]
			if !ok {
				t.Fatalf("prompt %q yields <%s>: %s", src, tok.Data, out)
			}
			var rel string
			for _, a := range tok.Attr {
				if !attrs[a.Key] {
					t.Fatalf("prompt %q yields <%s %s=%q>: %s", src, tok.Data, a.Key, a.Val, out)
				}
				if a.Key == "href" {
					u := strings.ToLower(a.Val)
					if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "mailto:") {
						t.Fatalf("prompt %q links to %q", src, a.Val)
					}
				}
				if a.Key == "rel" {
					rel = a.Val
				}
			}
			if tok.Data == "a" && rel != "noopener noreferrer nofollow" {
				t.Fatalf("prompt %q: a link without rel=noopener noreferrer nofollow: %s", src, out)
			}
		}
	}
}

// renderQuestion renders the card's heading and the Markdown of its
// prompt, as the card shows them, from an agent's prompt.
func renderQuestion(t *testing.T, prompt string) string {
	t.Helper()
	c := sampleCard("cmd", "agent", "s", aep.Request{Kind: aep.KindInput, Prompt: prompt})
	v := view.Card(c, answerable())
	var buf bytes.Buffer
	require.NoError(t, cardTitle(v).Render(context.Background(), &buf))
	require.NoError(t, mdBlocks(v.Prompt.Blocks).Render(context.Background(), &buf))
	// And the whole prompt as blocks, its first line included (the card
	// shows it as the heading; a settled card's details may not).
	whole := markdown.Parse(prompt, markdown.Options{Clean: view.Text})
	require.NoError(t, mdBlocks(whole.Blocks).Render(context.Background(), &buf))
	return buf.String()
}

var mdSeeds = []string{
	"## Release checklist for **billing-api**\n\n- [ ] tests green\n- [x] changelog\n\nRun `make deploy`:\n\n```sh\nmake deploy\n```",
	"[docs](https://example.com) [x](javascript:alert(1)) [y](data:text/html,<b>) [z](/signout) ![i](https://t.example/p.gif)",
	"<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\nhi <b onclick=x>there</b> <!-- c -->",
	"> quote\n> > nested\n\n1. one\n2. two\n   * three",
	"*a **b *c* d** e* `x` \\* &amp; &#x202E; &#0; \x07 \u202e",
	"<https://example.com/a?b=\"c\">  <mailto:a@b.example>  [t](https://x.example/ \"title\")",
	"Title\n===\n\n---\n\n[ref]: https://example.com\n\n[ref]",
	strings.Repeat("* ", 40) + "deep",
	strings.Repeat("[a](<b", 300),
}

func TestPromptMarkdownStaysInTheAllowedSet(t *testing.T) {
	t.Parallel()
	for _, s := range mdSeeds {
		checkPromptHTML(t, s, renderQuestion(t, s))
	}
	out := renderQuestion(t, "Intro\n\n"+mdSeeds[0])
	assert.Contains(t, out, `<p class="md-heading" dir="auto">`, "a heading that is not the first line is bold text")
	assert.Contains(t, out, "<code><bdi>make deploy</bdi></code>")
	assert.Contains(t, out, `<pre class="md-code" dir="ltr"><code>make deploy</code></pre>`)
	assert.Contains(t, out, `md-task__mark--done`)
	out = renderQuestion(t, "Read this\n\n"+mdSeeds[1])
	assert.Contains(t, out, `<a href="https://example.com" rel="noopener noreferrer nofollow" target="_blank"><bdi>docs</bdi></a> <span class="md-url">(<bdi>https://example.com</bdi>)</span>`, "the full URL visible")
	assert.Contains(t, out, "x (javascript:alert(1))", "a javascript: link is text")
	assert.NotContains(t, out, "<img")
	out = renderQuestion(t, "Look\n\n"+mdSeeds[2])
	assert.Contains(t, out, "&lt;script&gt;alert(1)&lt;/script&gt;", "raw HTML shown as text")
}

// FuzzPromptMarkdown: no agent prompt yields an element or attribute
// outside the components' set, a link to another scheme, or a control
// character.
func FuzzPromptMarkdown(f *testing.F) {
	for _, s := range mdSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkPromptHTML(t, s, renderQuestion(t, s))
	})
}
