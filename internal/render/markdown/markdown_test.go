package markdown

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	d := Parse("## Release checklist for **billing-api**\n\nRun `make test` first.\nThen deploy.\n\n- [ ] tests green\n- [x] changelog\n\n```sh\nmake deploy\n```\n\n1. one\n2. two\n", Options{})
	require.Len(t, d.Blocks, 5)
	h := d.Blocks[0]
	assert.Equal(t, Heading, h.Kind)
	assert.Equal(t, []Inline{{Kind: Text, Text: "Release checklist for "}, {Kind: Strong, Children: []Inline{{Kind: Text, Text: "billing-api"}}}}, h.Inlines)
	p := d.Blocks[1]
	assert.Equal(t, Para, p.Kind)
	assert.Equal(t, []Inline{{Kind: Text, Text: "Run "}, {Kind: Mono, Text: "make test"}, {Kind: Text, Text: " first."}, {Kind: Break}, {Kind: Text, Text: "Then deploy."}}, p.Inlines, "line breaks kept")
	l := d.Blocks[2]
	require.Equal(t, List, l.Kind)
	require.Len(t, l.Items, 2)
	assert.True(t, l.Items[0].Task)
	assert.False(t, l.Items[0].Done)
	assert.True(t, l.Items[1].Done)
	assert.Equal(t, []Inline{{Kind: Text, Text: "changelog"}}, l.Items[1].Blocks[0].Inlines, "the marker is not text")
	assert.Equal(t, Block{Kind: Code, Text: "make deploy"}, d.Blocks[3])
	assert.True(t, d.Blocks[4].Ordered)
	assert.Equal(t, 1, d.Blocks[4].Start)

	line, rest := d.FirstLine()
	assert.Equal(t, "Release checklist for billing-api", line, "markup stripped")
	assert.Len(t, rest, 4, "a heading of its own leaves the quote")
}

func TestParseLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src  string
		want Inline
	}{
		{"[docs](https://example.com/a?b=1)", Inline{Kind: Link, URL: "https://example.com/a?b=1", Children: []Inline{{Kind: Text, Text: "docs"}}}},
		{"<https://example.com>", Inline{Kind: Link, URL: "https://example.com", Children: []Inline{{Kind: Text, Text: "https://example.com"}}}},
		{"[mail](mailto:a@example.com)", Inline{Kind: Link, URL: "mailto:a@example.com", Children: []Inline{{Kind: Text, Text: "mail"}}}},
		{"[x](javascript:alert(1))", Inline{Kind: Text, Text: "x (javascript:alert(1))"}},
		{"[x](JAVASCRIPT:alert(1))", Inline{Kind: Text, Text: "x (JAVASCRIPT:alert(1))"}},
		{"[x](data:text/html,hi)", Inline{Kind: Text, Text: "x (data:text/html,hi)"}},
		{"[x](/signout)", Inline{Kind: Text, Text: "x (/signout)"}},
		{"[x](//evil.example/)", Inline{Kind: Text, Text: "x (//evil.example/)"}},
		{"![logo](https://example.com/t.png)", Inline{Kind: Text, Text: "logo (https://example.com/t.png)"}},
		{"<b onclick=x>hi</b>", Inline{Kind: Text, Text: "<b onclick=x>hi</b>"}},
	} {
		d := Parse(tc.src, Options{})
		require.Len(t, d.Blocks, 1, tc.src)
		require.Len(t, d.Blocks[0].Inlines, 1, tc.src)
		assert.Equal(t, tc.want, d.Blocks[0].Inlines[0], tc.src)
	}
	d := Parse("<script>alert(1)</script>", Options{})
	assert.Equal(t, []Block{{Kind: Plain, Text: "<script>alert(1)</script>"}}, d.Blocks, "raw HTML shown as written")
}

func TestParseClean(t *testing.T) {
	t.Parallel()
	up := Options{Clean: strings.ToUpper}
	d := Parse("a *b* `c`\n\n```\nd\n```\n[e](https://x.example/f)", up)
	assert.Equal(t, "A ", d.Blocks[0].Inlines[0].Text)
	assert.Equal(t, "B", d.Blocks[0].Inlines[1].Children[0].Text)
	assert.Equal(t, "C", d.Blocks[0].Inlines[3].Text)
	assert.Equal(t, "D", d.Blocks[1].Text)
	assert.Equal(t, "HTTPS://X.EXAMPLE/F", d.Blocks[2].Inlines[0].URL)
	// Character references resolve before Clean sees the text.
	d = Parse("x&#0;y &#x202E;", Options{Clean: func(s string) string { return strings.ReplaceAll(s, "\u202e", "[RLO]") }})
	assert.Equal(t, "x\ufffdy [RLO]", d.Blocks[0].Inlines[0].Text)
}

func TestBound(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("* ", MaxDepth+1) + "a\n"
	ok := strings.Repeat("> ", MaxDepth) + "a\n"
	assert.Equal(t, len(ok), Bound(ok))
	assert.Equal(t, 3, Bound("hi\n"+deep), "markdown up to the deep line")
	assert.Equal(t, 0, Bound(strings.Repeat("    ", 5)+"- x\n"), "indentation counts as nesting")

	big := strings.Repeat("word ", MaxBytes/5) + "\nlast line\n"
	n := Bound(big)
	assert.LessOrEqual(t, n, MaxBytes)
	d := Parse(big, Options{})
	require.Len(t, d.Blocks, 2)
	assert.Equal(t, Plain, d.Blocks[1].Kind)
	assert.Equal(t, "last line", d.Blocks[1].Text, "the rest is plain text")

	links := "intro\n\n" + strings.Repeat("[a](<b", MaxBrackets+1) + "\n"
	assert.Equal(t, len("intro\n\n"), Bound(links), "a paragraph of too many link openers is plain text")

	d = Parse(deep, Options{})
	assert.Equal(t, []Block{{Kind: Plain, Text: strings.TrimSuffix(deep, "\n")}}, d.Blocks)
}

func TestInlineDepth(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("*a ", MaxDepth+3) + "x" + strings.Repeat(" b*", MaxDepth+3)
	d := Parse(src, Options{})
	depth := 0
	var walk func([]Inline, int)
	walk = func(in []Inline, n int) {
		depth = max(depth, n)
		for _, i := range in {
			walk(i.Children, n+1)
		}
	}
	walk(d.Blocks[0].Inlines, 0)
	assert.LessOrEqual(t, depth, MaxDepth+1)
}

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache(2)
	a := c.Parse("a", Options{})
	assert.Same(t, a, c.Parse("a", Options{}), "read once")
	c.Parse("b", Options{})
	c.Parse("c", Options{})
	assert.NotSame(t, a, c.Parse("a", Options{}), "bounded: started over")
}

// A prompt of many small nodes stops being Markdown at MaxNodes: the
// rest, as written, is one plain-text block.
func TestNodeBudget(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("- a\n", 2000)
	d := Parse(src, Options{})
	require.Len(t, d.Blocks, 2)
	l := d.Blocks[0]
	require.Equal(t, List, l.Kind)
	assert.Less(t, len(l.Items), MaxNodes/2, "items cost nodes")
	rest := d.Blocks[1]
	assert.Equal(t, Plain, rest.Kind)
	assert.True(t, strings.HasPrefix(rest.Text, "- a\n- a"), "the rest as written, markers included")
	assert.Equal(t, 2000, len(l.Items)+strings.Count(rest.Text, "- a"), "nothing lost")

	para := strings.Repeat("[a](https://x.example/) ", 100) + "\n\n"
	d = Parse(strings.Repeat(para, 4)+"next *para*\n", Options{})
	n := 0
	for _, b := range d.Blocks {
		for _, in := range b.Inlines {
			if in.Kind == Link {
				n++
			}
		}
	}
	assert.LessOrEqual(t, n, MaxNodes/3, "a link costs three nodes")
	last := d.Blocks[len(d.Blocks)-1]
	assert.Equal(t, Plain, last.Kind)
	assert.True(t, strings.HasSuffix(last.Text, "next *para*"), "the rest is plain text, as written")
}

// The cache is bounded by bytes as well as entries, and keeps no
// caller's string alive: a big prompt a card let go of is freed.
func TestCacheBoundedByBytes(t *testing.T) {
	t.Parallel()
	c := NewCacheWithin(4096, 1<<20)
	for i := range 64 {
		c.Parse(strings.Repeat("x", 100<<10)+strconv.Itoa(i), Options{})
		assert.LessOrEqual(t, c.Bytes(), 1<<20, "after %d prompts of 100 KiB", i+1)
	}
	big := strings.Repeat("y", 4<<20)
	d := c.Parse(big, Options{})
	require.NotEmpty(t, d.Blocks, "too big to keep, still read")
	assert.LessOrEqual(t, c.Bytes(), 1<<20)
}

// A Doc the cache keeps does not point into the text it was asked with.
func TestCacheKeepsNoCallerText(t *testing.T) {
	t.Parallel()
	c := NewCacheWithin(16, 1<<20)
	src := strings.Repeat("word ", 20<<10)
	head := src[:24<<10] // a card's shown part: a substring of the prompt, past MaxBytes
	d := c.Parse(head, Options{})
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(src))), uintptr(unsafe.Pointer(unsafe.StringData(src)))+uintptr(len(src))
	var walk func([]Block)
	walk = func(bs []Block) {
		for _, b := range bs {
			for _, s := range append([]string{b.Text}, inlineTexts(b.Inlines)...) {
				if s == "" {
					continue
				}
				p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
				assert.False(t, p >= lo && p < hi, "a cached Doc holds a substring of the caller's prompt")
			}
			walk(b.Blocks)
			for _, it := range b.Items {
				walk(it.Blocks)
			}
		}
	}
	walk(d.Blocks)
}

func inlineTexts(in []Inline) []string {
	var out []string
	for _, i := range in {
		out = append(out, i.Text)
		out = append(out, inlineTexts(i.Children)...)
	}
	return out
}
