package markdown

import (
	"strconv"
	"strings"
	"unicode"
)

// ShowsURL is whether a card shows a link's address beside its text:
// always, unless the text is the address itself.
func ShowsURL(i Inline) bool {
	return !(len(i.Children) == 1 && i.Children[0].Kind == Text && i.Children[0].Text == i.URL)
}

// Visible is the document's text as a card shows it: the words of every
// block, inline code and code blocks as written, list markers, and a
// link's address where the card shows it (ShowsURL), with whitespace
// normalised (NormalSpace). What a rule compares of a question.
func (d *Doc) Visible() string {
	if d == nil {
		return ""
	}
	var s strings.Builder
	for _, b := range d.Blocks {
		visibleBlock(&s, b)
		s.WriteByte('\n')
	}
	return NormalSpace(s.String())
}

func visibleBlock(s *strings.Builder, b Block) {
	switch b.Kind {
	case Para, Heading:
		visibleInlines(s, b.Inlines)
	case List:
		for i, it := range b.Items {
			if b.Ordered {
				s.WriteString(strconv.Itoa(b.Start+i) + ". ")
			}
			switch {
			case it.Task && it.Done:
				s.WriteString("[x] ") // the card's ticked box
			case it.Task:
				s.WriteString("[ ] ")
			}
			for _, c := range it.Blocks {
				visibleBlock(s, c)
				s.WriteByte('\n')
			}
		}
	case Quote:
		for _, c := range b.Blocks {
			visibleBlock(s, c)
			s.WriteByte('\n')
		}
	default: // Code, Plain
		s.WriteString(b.Text)
	}
}

func visibleInlines(s *strings.Builder, in []Inline) {
	for _, i := range in {
		switch i.Kind {
		case Break:
			s.WriteByte('\n')
		case Text, Mono:
			s.WriteString(i.Text)
		case Link:
			visibleInlines(s, i.Children)
			if ShowsURL(i) {
				s.WriteString(" (" + i.URL + ")")
			}
		default:
			visibleInlines(s, i.Children)
		}
	}
}

// NormalSpace normalises whitespace as the eye reads it: each run of
// white space holding a line break becomes one line break, any other run
// one space, and the ends are trimmed.
func NormalSpace(t string) string {
	var s strings.Builder
	s.Grow(len(t))
	space, nl := false, false
	for _, r := range t {
		if unicode.IsSpace(r) {
			space = true
			nl = nl || r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\v' || r == '\f' || r == '\u0085'
			continue
		}
		if space && s.Len() > 0 {
			if nl {
				s.WriteByte('\n')
			} else {
				s.WriteByte(' ')
			}
		}
		space, nl = false, false
		s.WriteRune(r)
	}
	return s.String()
}
