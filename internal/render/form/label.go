package form

import (
	"strings"
	"unicode/utf8"
)

// LabelRunes is how much of a label an agent wrote a form shows: field,
// choice and option labels and ids, each up to 200 characters, a longer
// one cut with "…". Labels are the agents' to choose: whole, fifty
// cards with big labels made a 50 MB page.
const LabelRunes = 200

// Label is s as a form shows it: whole up to LabelRunes characters, else
// its first LabelRunes-1 and "…", in memory of its own.
func Label(s string) string { return Cut(s, LabelRunes) }

// Cut is s up to n characters, else its first n-1 and "…". The result
// never shares s's memory when cut, so a cut text does not keep a long
// one alive.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s // n bytes are at most n characters
	}
	i := 0
	for k := 0; k < n-1 && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	if i >= len(s) {
		return s
	}
	if _, w := utf8.DecodeRuneInString(s[i:]); i+w == len(s) {
		return s // exactly n characters
	}
	var b strings.Builder
	b.Grow(i + len("…"))
	b.WriteString(s[:i])
	b.WriteString("…")
	return b.String()
}
