package markdown

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstLineSpansKeepInlineCodeApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want []Span
	}{
		{"Run `make release`?", []Span{{Text: "Run "}, {Text: "make release", Code: true}, {Text: "?"}}},
		{"  **Deploy** `v2` to *prod*\nthe rest", []Span{{Text: "Deploy "}, {Text: "v2", Code: true}, {Text: " to prod"}}},
		{"`rm -rf build`", []Span{{Text: "rm -rf build", Code: true}}},
		{"No code here", nil},
		{"```\nmake\n```", nil},
	} {
		assert.Equal(t, tc.want, Parse(tc.text, Options{}).FirstLineSpans(), "%q", tc.text)
	}
}
