package webpush

import (
	"regexp"
	"strings"
)

var (
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	mdLead     = regexp.MustCompile(`^(\s*(#{1,6}|>|[-*+]|\d+[.)])\s+)+`)
	mdEmphasis = regexp.MustCompile("[*_~`]+")
)

// FirstLine is the first non-blank line of a Markdown prompt as plain
// text: headings, quotes, list markers, emphasis and code marks dropped,
// links reduced to their text. A notification shows text, not markup.
func FirstLine(md string) string {
	for line := range strings.SplitSeq(md, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "```") {
			continue
		}
		line = mdLead.ReplaceAllString(line, "")
		line = mdLink.ReplaceAllString(line, "$1")
		line = mdEmphasis.ReplaceAllString(line, "")
		line = strings.Join(strings.Fields(line), " ")
		if line != "" {
			return line
		}
	}
	return ""
}
