package markdown

import (
	"strconv"
	"strings"
)

// PlainText is the document as plain text, without markup: paragraphs
// and headings as their words (line breaks kept), code as written, list
// items one a line after "• " (or "1. "), quotes as their text; blocks
// apart by a blank line. Where the words are shown outside a card (the
// history, its exports), not as raw Markdown.
func (d *Doc) PlainText() string {
	if d == nil {
		return ""
	}
	var parts []string
	for _, b := range d.Blocks {
		if t := strings.TrimSpace(plainBlock(b)); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

func plainBlock(b Block) string {
	switch b.Kind {
	case Para, Heading:
		var s strings.Builder
		plainInlines(&s, b.Inlines)
		return s.String()
	case Code, Plain:
		return b.Text
	case List:
		var lines []string
		for i, it := range b.Items {
			var item []string
			for _, c := range it.Blocks {
				if t := strings.TrimSpace(plainBlock(c)); t != "" {
					item = append(item, t)
				}
			}
			mark := "• "
			if b.Ordered {
				mark = strconv.Itoa(b.Start+i) + ". "
			}
			lines = append(lines, mark+strings.Join(item, "\n"))
		}
		return strings.Join(lines, "\n")
	case Quote:
		var parts []string
		for _, c := range b.Blocks {
			if t := strings.TrimSpace(plainBlock(c)); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	return b.Text
}

func plainInlines(s *strings.Builder, in []Inline) {
	for _, i := range in {
		switch i.Kind {
		case Break:
			s.WriteString("\n")
		case Text, Mono:
			s.WriteString(i.Text)
		default:
			plainInlines(s, i.Children)
		}
	}
}
