package markdown

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark/text"
)

// The pathological inputs of goldmark (as measured on goldmark
// alone: 16 KB of nested "* " 142 ms, 96 KB of "[a](<b" 1.1 s), read
// through Parse's bounds, beside a baseline of plain prose of the same
// size, and beside goldmark unbounded on the same input (which shows
// what the bounds save). -short keeps every input small for the CI
// smoke run.
func benchInputs(b *testing.B) []struct{ name, src string } {
	size := 96 << 10
	if testing.Short() {
		size = 2 << 10
	}
	// rep is n bytes of unit ending in a line "a": text after the
	// markers makes nested list items of them, not a thematic break.
	rep := func(unit string, n int) string { return strings.Repeat(unit, (n-2)/len(unit)) + "a\n" }
	return []struct{ name, src string }{
		{"baseline-prose", rep("Deploy the *billing* service `now`.\n", size)},
		{"nested-stars-16k", rep("* ", min(size, 16<<10))},
		{"nested-quotes-16k", rep("> ", min(size, 16<<10))},
		{"open-links-96k", rep("[a](<b", size)},
		{"open-brackets-96k", rep("[", size)},
	}
}

func BenchmarkParse(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.src)))
			for b.Loop() {
				Parse(in.src, Options{})
			}
		})
	}
}

// BenchmarkGoldmarkUnbounded is goldmark on the bounded size (MaxBytes)
// of the same inputs, without Parse's bounds.
func BenchmarkGoldmarkUnbounded(b *testing.B) {
	for _, in := range benchInputs(b) {
		src := []byte(in.src[:min(len(in.src), MaxBytes)])
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				md.Parser().Parse(text.NewReader(src))
			}
		})
	}
}
