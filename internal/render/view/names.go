package view

import (
	"strings"
	"unicode/utf8"
)

// NameRunes is how much of a name an agent chose a page shows: the
// agent's, session's and run's names, the source, the request id and the
// sender of another answer, each up to 120 characters, a longer one cut
// with "…". Names are the agents' to choose: without the cut, 42 cards
// with 1 MiB agent names made a 113 MB page.
const NameRunes = 120

// Name is s as a page shows it: whole up to NameRunes characters, else
// its first NameRunes-1 and "…". The result never shares s's memory when
// cut, so a cut name does not keep a long one alive.
func Name(s string) string { return cutRunes(s, NameRunes) }

// cutRunes is s up to n characters, else its first n-1 and "…".
func cutRunes(s string, n int) string {
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
