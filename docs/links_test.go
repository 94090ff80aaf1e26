package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkedDocs are the Markdown files whose links are checked: the README
// and everything it sends a reader to.
var linkedDocs = []string{"../README.md", "DESIGN.md", "OPERATIONS.md", "PERFORMANCE.md", "RELIABILITY.md"}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// anchors are the ids GitHub gives a Markdown file's headings: lower
// case, punctuation dropped, spaces to hyphens, a repeat numbered.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		m := mdHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[id+"-"+strconv.Itoa(n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// TestDocLinksResolve keeps the docs' cross-references whole after a
// section moves: every relative link names a file that exists and, with
// a #fragment into a Markdown file, a heading it has.
func TestDocLinksResolve(t *testing.T) {
	ids := map[string]map[string]bool{}
	read := func(path string) (string, bool) {
		b, err := os.ReadFile(path)
		return string(b), err == nil
	}
	for _, doc := range linkedDocs {
		md, ok := read(doc)
		if !ok {
			t.Fatalf("%s is missing", doc)
		}
		for _, m := range mdLink.FindAllStringSubmatch(md, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s: no such file", doc, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if ids[path] == nil {
				body, _ := read(path)
				ids[path] = anchors(body)
			}
			if !ids[path][frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", doc, target, path, frag)
			}
		}
	}
}
