// Package markdown reads the Markdown agents write in their prompts into a
// small tree of its own types that the templ components render. The tree
// can only hold what a prompt may show: paragraphs, emphasis, inline code
// and code blocks, lists and task lists (the markers read-only), headings
// (shown as bold text), block quotes, and links to http, https and mailto
// URLs. Everything else the agent wrote (raw HTML, images, links to other
// schemes, what lies past the bounds) stays visible as plain text. No HTML
// is built here: the components escape every string, so the set of
// elements and attributes a prompt yields is the components' set, by
// construction.
//
// Cost is bounded before goldmark sees the text: goldmark's block and link
// parsing is quadratic on some inputs (16 KB of nested "* " takes about
// 200 ms, 96 KB of "[a](<b" about a second), so only the first MaxBytes
// are read as Markdown, and only up to the first line nested deeper than
// MaxDepth or the first paragraph holding more than MaxBrackets link
// openers; the rest is one plain-text block.
package markdown

import (
	"bytes"
	"crypto/sha256"
	"net/url"
	"strings"
	"sync"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The bounds of what is read as Markdown.
const (
	// MaxBytes is how much of a prompt is read as Markdown: 16 KiB.
	MaxBytes = 16 << 10
	// MaxDepth is the deepest nesting read as Markdown, of blocks (lists,
	// quotes) and of inlines (emphasis, links) each.
	MaxDepth = 8
	// MaxBrackets is the most link openers ('[') one paragraph may hold
	// and still be read as Markdown.
	MaxBrackets = 128
	// MaxNodes is the most blocks, items and inlines a prompt yields (a
	// link counts three: it shows its address too); the rest is plain
	// text. It bounds the markup a prompt costs the page: a line of
	// Markdown can be a few bytes ("- a") and its HTML ten times more.
	MaxNodes = 400
)

// BlockKind is what a Block is.
type BlockKind uint8

// The blocks a prompt may show.
const (
	Para    BlockKind = iota // Inlines
	Heading                  // Inlines, shown as bold text
	Code                     // Text, a code block
	List                     // Items (Ordered, Start)
	Quote                    // Blocks
	Plain                    // Text, shown as written (line breaks kept)
)

// Block is one block of a prompt.
type Block struct {
	Kind BlockKind
	// Tight is set on a paragraph of a tight list item: shown without a
	// paragraph of its own.
	Tight   bool
	Inlines []Inline
	Text    string
	Ordered bool
	Start   int
	Items   []Item
	Blocks  []Block
}

// Item is one list item; Task says it has a task marker, Done whether it
// is ticked.
type Item struct {
	Task, Done bool
	Blocks     []Block
}

// InlineKind is what an Inline is.
type InlineKind uint8

// The inlines a prompt may show.
const (
	Text   InlineKind = iota // Text
	Emph                     // Children
	Strong                   // Children
	Mono                     // Text, inline code
	Link                     // Children, URL (http, https or mailto only)
	Break                    // a line break
)

// Inline is one run of a paragraph.
type Inline struct {
	Kind     InlineKind
	Text     string
	URL      string
	Children []Inline
}

// Doc is a prompt read as Markdown.
type Doc struct {
	Blocks []Block
}

// Options say how text leaves the tree: Clean is applied to every string
// of it (the agent-text rules of the caller, e.g. control characters
// replaced); nil keeps the text as is.
type Options struct {
	Clean func(string) string
}

var md = goldmark.New(goldmark.WithExtensions(extension.TaskList))

// Parse reads a prompt. The Doc it returns may be shared (see Cache):
// treat it as read-only.
func Parse(src string, opts Options) *Doc {
	clean := opts.Clean
	if clean == nil {
		clean = func(s string) string { return s }
	}
	cut := Bound(src)
	b := builder{src: []byte(src[:cut]), clean: clean, cut: -1}
	var d Doc
	if cut > 0 {
		root := md.Parser().Parse(text.NewReader(b.src))
		d.Blocks = b.blocks(root, 0)
		if b.cut >= 0 {
			cut = b.cut // past MaxNodes: the rest is plain text
		}
	}
	if rest := strings.Trim(src[cut:], "\n"); rest != "" {
		d.Blocks = append(d.Blocks, Block{Kind: Plain, Text: clean(rest)})
	}
	return &d
}

// Bound is how much of src is read as Markdown: at most MaxBytes, cut at
// a line break, and ending before the first line whose container nesting
// may be deeper than MaxDepth or the first paragraph holding more than
// MaxBrackets '['. It is linear and errs on the side of plain text.
func Bound(src string) int {
	limit := len(src)
	if limit > MaxBytes {
		limit = MaxBytes
		if nl := strings.LastIndexByte(src[:limit], '\n'); nl >= 0 {
			limit = nl + 1
		} else {
			return 0
		}
	}
	para, brackets := 0, 0
	for start := 0; start < limit; {
		end := strings.IndexByte(src[start:limit], '\n')
		if end < 0 {
			end = limit
		} else {
			end += start + 1
		}
		line := src[start:end]
		if strings.TrimSpace(line) == "" {
			para, brackets = end, 0
		} else {
			if depth(line) > MaxDepth {
				return start
			}
			if brackets += strings.Count(line, "["); brackets > MaxBrackets {
				return para
			}
		}
		start = end
	}
	return limit
}

// depth estimates the container nesting a line opens: its block-quote and
// list markers, and two columns of indentation for each list level it may
// continue. It never estimates low.
func depth(line string) int {
	d, indent := 0, 0
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ':
			indent++
			i++
		case c == '\t':
			indent += 4
			i++
		case c == '>':
			d++
			i = skipOne(line, i+1)
		case (c == '*' || c == '-' || c == '+') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
			d++
			i = skipOne(line, i+1)
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 10 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j+1 < len(line) && (line[j] == '.' || line[j] == ')') && (line[j+1] == ' ' || line[j+1] == '\t') {
				d++
				i = skipOne(line, j+1)
				continue
			}
			return d + indent/2
		default:
			return d + indent/2
		}
	}
	return d + indent/2
}

// skipOne skips the one space that follows a container marker.
func skipOne(line string, i int) int {
	if i < len(line) && line[i] == ' ' {
		return i + 1
	}
	return i
}

// builder turns goldmark's tree into ours.
type builder struct {
	src   []byte
	clean func(string) string
	nodes int // spent of MaxNodes
	cut   int // where the plain rest starts once MaxNodes is spent; -1 before
}

// full reports whether MaxNodes is spent; before block n it then sets
// cut at n's first line, so the rest is plain text. A block without a
// line of its own (none found) is converted, and the next one cuts.
func (b *builder) full(n ast.Node) bool {
	if b.cut >= 0 {
		return true
	}
	if b.nodes < MaxNodes {
		return false
	}
	if at := firstOffset(n); at >= 0 {
		b.cut = bytes.LastIndexByte(b.src[:at], '\n') + 1
		return true
	}
	return false
}

// firstOffset is where the first line of text inside block n starts in
// the source, or -1.
func firstOffset(n ast.Node) int {
	at := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			at = c.Lines().At(0).Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return at
}

func (b *builder) blocks(parent ast.Node, depth int) []Block {
	var out []Block
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		if b.full(n) {
			break
		}
		b.nodes++
		if depth >= MaxDepth {
			if t := b.lines(n); t != "" {
				out = append(out, Block{Kind: Plain, Text: t})
			}
			continue
		}
		switch n := n.(type) {
		case *ast.Paragraph, *ast.TextBlock:
			if in := b.inlines(n, 0); len(in) > 0 {
				_, tight := n.(*ast.TextBlock)
				out = append(out, Block{Kind: Para, Inlines: in, Tight: tight})
			}
		case *ast.Heading:
			out = append(out, Block{Kind: Heading, Inlines: b.inlines(n, 0)})
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			out = append(out, Block{Kind: Code, Text: b.clean(strings.TrimSuffix(b.linesRaw(n), "\n"))})
		case *ast.HTMLBlock:
			// Raw HTML is text the agent wrote: shown as written.
			t := b.linesRaw(n)
			if n.HasClosure() {
				t += string(n.ClosureLine.Value(b.src))
			}
			out = append(out, Block{Kind: Plain, Text: b.clean(strings.TrimSuffix(t, "\n"))})
		case *ast.List:
			l := Block{Kind: List, Ordered: n.IsOrdered(), Start: n.Start}
			for it := n.FirstChild(); it != nil; it = it.NextSibling() {
				if b.full(it) {
					break
				}
				b.nodes++
				item := Item{}
				if tb := it.FirstChild(); tb != nil {
					if cb, ok := tb.FirstChild().(*east.TaskCheckBox); ok {
						item.Task, item.Done = true, cb.IsChecked
					}
				}
				item.Blocks = b.blocks(it, depth+1)
				l.Items = append(l.Items, item)
			}
			out = append(out, l)
		case *ast.Blockquote:
			out = append(out, Block{Kind: Quote, Blocks: b.blocks(n, depth+1)})
		case *ast.ThematicBreak, *ast.LinkReferenceDefinition:
			// Nothing to read.
		default:
			if t := b.lines(n); t != "" {
				out = append(out, Block{Kind: Plain, Text: t})
			}
		}
	}
	return out
}

// inlines converts the inline children of n; past MaxDepth a subtree is
// its plain text.
func (b *builder) inlines(n ast.Node, depth int) []Inline {
	var out []Inline
	add := func(in Inline) {
		if in.Kind == Text && in.Text == "" {
			return
		}
		if in.Kind == Text && len(out) > 0 && out[len(out)-1].Kind == Text {
			out[len(out)-1].Text += in.Text
			return
		}
		out = append(out, in)
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.nodes++
		if depth >= MaxDepth || b.nodes > MaxNodes {
			add(Inline{Kind: Text, Text: b.clean(b.plain(c))})
			continue
		}
		switch c := c.(type) {
		case *ast.Text:
			add(Inline{Kind: Text, Text: b.clean(b.unescape(c.Segment.Value(b.src)))})
			if c.HardLineBreak() || c.SoftLineBreak() {
				// Line breaks are kept, as the agent wrote them.
				add(Inline{Kind: Break})
			}
		case *ast.String:
			add(Inline{Kind: Text, Text: b.clean(string(c.Value))})
		case *ast.CodeSpan:
			add(Inline{Kind: Mono, Text: b.clean(b.codeSpan(c))})
		case *ast.Emphasis:
			k := Emph
			if c.Level >= 2 {
				k = Strong
			}
			add(Inline{Kind: k, Children: b.inlines(c, depth+1)})
		case *ast.Link:
			b.nodes += 2
			add(b.link(string(c.Destination), b.inlines(c, depth+1)))
		case *ast.AutoLink:
			b.nodes += 2
			u := string(c.URL(b.src))
			add(b.link(u, []Inline{{Kind: Text, Text: b.clean(string(c.Label(b.src)))}}))
		case *ast.Image:
			// No images: the alt text and the address, as text.
			alt := b.plain(c)
			add(Inline{Kind: Text, Text: b.clean(alt + " (" + string(c.Destination) + ")")})
		case *ast.RawHTML:
			var raw []byte
			for i := 0; i < c.Segments.Len(); i++ {
				s := c.Segments.At(i)
				raw = append(raw, s.Value(b.src)...)
			}
			add(Inline{Kind: Text, Text: b.clean(string(raw))})
		case *east.TaskCheckBox:
			// Its item says Task and Done.
		default:
			add(Inline{Kind: Text, Text: b.clean(b.plain(c))})
		}
	}
	// A break at the end of a paragraph shows nothing.
	for len(out) > 0 && out[len(out)-1].Kind == Break {
		out = out[:len(out)-1]
	}
	return out
}

// link is a link to u with its text, or, when u is not an address a
// prompt may link to, the text and the address as plain text.
func (b *builder) link(u string, children []Inline) Inline {
	if safeURL(u) {
		return Inline{Kind: Link, URL: b.clean(u), Children: children}
	}
	t := b.plainInlines(children)
	if u != "" && u != t {
		t += " (" + b.clean(u) + ")"
	}
	return Inline{Kind: Text, Text: t}
}

// safeURL reports whether u is an absolute http, https or mailto URL: a
// relative one would point into the operator's own UI, other schemes
// (javascript:, data:, file:) may run or hide content.
func safeURL(u string) bool {
	if u == "" || strings.ContainsAny(u, " \t\r\n\x00") {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.Host != ""
	case "mailto":
		return p.Opaque != ""
	}
	return false
}

func (b *builder) plainInlines(in []Inline) string {
	var s strings.Builder
	for _, i := range in {
		switch i.Kind {
		case Break:
			s.WriteByte(' ')
		case Text, Mono:
			s.WriteString(i.Text)
		default:
			s.WriteString(b.plainInlines(i.Children))
		}
	}
	return s.String()
}

// plain is the text of an inline subtree, without its markup.
func (b *builder) plain(n ast.Node) string {
	var s strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			s.WriteString(b.unescape(c.Segment.Value(b.src)))
			if c.SoftLineBreak() || c.HardLineBreak() {
				s.WriteByte(' ')
			}
		case *ast.String:
			s.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return s.String()
}

// lines is the source of a block subtree as written, cleaned.
func (b *builder) lines(n ast.Node) string {
	var s strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && c.Type() == ast.TypeBlock {
			s.WriteString(b.linesRaw(c))
		}
		return ast.WalkContinue, nil
	})
	return b.clean(strings.TrimRight(s.String(), "\n"))
}

func (b *builder) linesRaw(n ast.Node) string {
	var s strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		l := ls.At(i)
		s.Write(l.Value(b.src))
	}
	return s.String()
}

func (b *builder) codeSpan(n *ast.CodeSpan) string {
	var s []byte
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			v := t.Segment.Value(b.src)
			if bytes.HasSuffix(v, []byte("\n")) {
				v = append(v[:len(v)-1:len(v)-1], ' ')
			}
			s = append(s, v...)
		}
	}
	return string(s)
}

// unescape resolves backslash escapes and character references, as an
// HTML renderer of the text would.
func (b *builder) unescape(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 && bytes.IndexByte(v, '&') < 0 {
		return string(v)
	}
	v = util.UnescapePunctuations(v)
	v = util.ResolveNumericReferences(v)
	v = util.ResolveEntityNames(v)
	return string(v)
}

// FirstLine is the first line of d's text without its markup: a card's
// title. Rest is d without that line when it was a block of its own (a
// one-line paragraph or a heading), else d.
func (d *Doc) FirstLine() (line string, rest []Block) {
	if d == nil || len(d.Blocks) == 0 {
		return "", nil
	}
	first := d.Blocks[0]
	line = firstLine(first)
	if (first.Kind == Para || first.Kind == Heading) && !hasBreak(first.Inlines) {
		return line, d.Blocks[1:]
	}
	return line, d.Blocks
}

func firstLine(bl Block) string {
	switch bl.Kind {
	case Para, Heading:
		var s strings.Builder
		inlineLine(&s, bl.Inlines)
		return strings.TrimSpace(s.String())
	case Code, Plain:
		for l := range strings.SplitSeq(bl.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				return l
			}
		}
	case List:
		for _, it := range bl.Items {
			for _, c := range it.Blocks {
				if l := firstLine(c); l != "" {
					return l
				}
			}
		}
	case Quote:
		for _, c := range bl.Blocks {
			if l := firstLine(c); l != "" {
				return l
			}
		}
	}
	return ""
}

// Span is a piece of a title line: its text, and whether the agent wrote
// it as inline code (a command, a path, a branch).
type Span struct {
	Text string
	Code bool
}

// FirstLineSpans is FirstLine's line in pieces that keep inline code
// apart, for a heading that shows a command as code; nil when the first
// block is not a paragraph or heading, or has no inline code.
func (d *Doc) FirstLineSpans() []Span {
	if d == nil || len(d.Blocks) == 0 {
		return nil
	}
	first := d.Blocks[0]
	if first.Kind != Para && first.Kind != Heading {
		return nil
	}
	var out []Span
	inlineSpans(&out, first.Inlines)
	code := false
	for _, sp := range out {
		code = code || sp.Code
	}
	if !code {
		return nil
	}
	out[0].Text = strings.TrimLeftFunc(out[0].Text, unicode.IsSpace)
	out[len(out)-1].Text = strings.TrimRightFunc(out[len(out)-1].Text, unicode.IsSpace)
	return out
}

// inlineSpans is inlineLine kept in pieces: adjacent text joins, inline
// code stays a piece of its own.
func inlineSpans(out *[]Span, in []Inline) bool {
	for _, i := range in {
		switch i.Kind {
		case Break:
			return false
		case Text, Mono:
			t, _, cut := strings.Cut(i.Text, "\n")
			code := i.Kind == Mono
			if n := len(*out); n > 0 && !code && !(*out)[n-1].Code {
				(*out)[n-1].Text += t
			} else if t != "" {
				*out = append(*out, Span{Text: t, Code: code})
			}
			if cut {
				return false
			}
		default:
			if !inlineSpans(out, i.Children) {
				return false
			}
		}
	}
	return true
}

// inlineLine writes the text of in up to its first break; false once it
// met one.
func inlineLine(s *strings.Builder, in []Inline) bool {
	for _, i := range in {
		switch i.Kind {
		case Break:
			return false
		case Text, Mono:
			t, _, cut := strings.Cut(i.Text, "\n")
			s.WriteString(t)
			if cut {
				return false
			}
		default:
			if !inlineLine(s, i.Children) {
				return false
			}
		}
	}
	return true
}

func hasBreak(in []Inline) bool {
	for _, i := range in {
		if i.Kind == Break || strings.Contains(i.Text, "\n") || hasBreak(i.Children) {
			return true
		}
	}
	return false
}

// Cache keeps parsed prompts by the digest of their text, so a card's
// prompt is read once however often the page is drawn. It is bounded by
// entries and by bytes (DefaultCacheBytes): each entry counts twice its
// text plus entryOverhead, past either bound it starts over, and a text
// too large to fit is parsed and not kept. It keeps no caller's string:
// a Doc is built from a copy of its text, so a prompt its card has let
// go of (a request dropped, a card settled and evicted) is not kept
// alive by the cache. Its methods are safe for concurrent use; the Docs
// it hands out are shared and must not be changed.
type Cache struct {
	mu       sync.Mutex
	size     int
	maxBytes int
	bytes    int
	m        map[[sha256.Size]byte]cached
}

type cached struct {
	doc  *Doc
	cost int
}

// DefaultCacheBytes bounds what a Cache made by NewCache holds: 32 MiB.
const DefaultCacheBytes = 32 << 20

// entryOverhead is what one entry counts besides its text, in bytes.
const entryOverhead = 512

// NewCache returns a cache of at most size parsed prompts and
// DefaultCacheBytes.
func NewCache(size int) *Cache { return NewCacheWithin(size, DefaultCacheBytes) }

// NewCacheWithin returns a cache of at most size parsed prompts and
// maxBytes bytes.
func NewCacheWithin(size, maxBytes int) *Cache {
	return &Cache{size: size, maxBytes: maxBytes, m: make(map[[sha256.Size]byte]cached)}
}

// Parse is Parse through the cache. opts must be the same on every call.
func (c *Cache) Parse(src string, opts Options) *Doc {
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return e.doc
	}
	cost := 2*len(src) + entryOverhead
	if cost > c.maxBytes {
		return Parse(src, opts)
	}
	d := Parse(strings.Clone(src), opts)
	c.mu.Lock()
	if old, ok := c.m[key]; ok {
		c.bytes -= old.cost
	}
	if len(c.m) >= c.size || c.bytes+cost > c.maxBytes {
		clear(c.m)
		c.bytes = 0
	}
	c.m[key] = cached{doc: d, cost: cost}
	c.bytes += cost
	c.mu.Unlock()
	return d
}

// Bytes is what the cache counts it holds, in bytes.
func (c *Cache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
