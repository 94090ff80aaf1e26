package static

import (
	"encoding/xml"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFiles(t *testing.T) {
	t.Parallel()
	for _, name := range Names {
		b, err := fs.ReadFile(FS, name)
		require.NoError(t, err, name)
		assert.NotEmpty(t, b, name)
	}
	entries, err := fs.ReadDir(FS, ".")
	require.NoError(t, err)
	var all []string
	for _, e := range entries {
		all = append(all, e.Name())
	}
	assert.ElementsMatch(t, Names, all, "Names lists every embedded file, so Hash covers them all")
	assert.Regexp(t, `^[0-9a-f]{12}$`, Hash())
	assert.Equal(t, Hash(), Hash(), "stable")
}

// The palette is written once: each colour is light-dark(light, dark), and
// color-scheme picks the side: the system's by default, and the page's
// theme ([data-theme] on <html>, from ?theme=) when it forces one. No second
// copy of the colours (a prefers-color-scheme block, a [data-theme] palette)
// is left to drift apart.
func TestPaletteWrittenOnce(t *testing.T) {
	t.Parallel()
	b, err := fs.ReadFile(FS, "app.css")
	require.NoError(t, err)
	css := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(b), "")
	root := block(t, css, ":root {")
	assert.Contains(t, decls(root), "color-scheme: light dark", "follows the system by default")
	assert.Equal(t, []string{"color-scheme: light"}, decls(block(t, css, `:root[data-theme="light"] {`)))
	assert.Equal(t, []string{"color-scheme: dark"}, decls(block(t, css, `:root[data-theme="dark"] {`)))
	assert.NotContains(t, css, "prefers-color-scheme")

	pairs := regexp.MustCompile(`(--[\w-]+): light-dark\(#[0-9a-f]{6}, #[0-9a-f]{6}\);`).FindAllStringSubmatch(root, -1)
	assert.Len(t, pairs, strings.Count(css, "light-dark("), "each light-dark() is a light and a dark colour, in :root")
	assert.Greater(t, len(pairs), 10)
	for _, m := range pairs {
		assert.Equal(t, 1, strings.Count(css, m[1]+":"), "%s is set once", m[1])
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(--[\w-]+)\s*:`).FindAllStringSubmatch(css, -1) {
		seen[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`var\((--[\w-]+)\)`).FindAllStringSubmatch(css, -1) {
		assert.True(t, seen[m[1]], "var(%s) is used but never defined", m[1])
	}
}

func block(t *testing.T, css, opener string) string {
	t.Helper()
	i := strings.Index(css, opener)
	require.GreaterOrEqual(t, i, 0, "no %q block", opener)
	rest := css[i+len(opener):]
	j := strings.Index(rest, "}")
	require.GreaterOrEqual(t, j, 0)
	return rest[:j]
}

func decls(block string) []string {
	var out []string
	for _, d := range strings.Split(block, ";") {
		if d = strings.Join(strings.Fields(d), " "); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// The script never posts to any origin ("*") and never evaluates strings.
func TestScriptSafety(t *testing.T) {
	t.Parallel()
	b, err := fs.ReadFile(FS, "app.js")
	require.NoError(t, err)
	js := string(b)
	assert.NotRegexp(t, regexp.MustCompile(`postMessage\([^)]*['"]\*['"]`), js)
	assert.NotRegexp(t, regexp.MustCompile(`\beval\(|new Function\(|innerHTML\s*=\s*[^;]*(dataset|textContent)`), js)
	assert.Contains(t, js, "aepforms:pending", "the panel's message type")
}

// The tab icon is a self-contained SVG: no script, no external reference
// (the CSP allows images from the UI itself only).
func TestIcon(t *testing.T) {
	t.Parallel()
	b, err := fs.ReadFile(FS, "icon.svg")
	require.NoError(t, err)
	var root struct {
		XMLName xml.Name
		ViewBox string `xml:"viewBox,attr"`
	}
	require.NoError(t, xml.Unmarshal(b, &root), "well-formed SVG")
	assert.Equal(t, "svg", root.XMLName.Local)
	assert.Equal(t, "http://www.w3.org/2000/svg", root.XMLName.Space)
	assert.NotEmpty(t, root.ViewBox, "scales to any tab size")
	svg := strings.ToLower(string(b))
	for _, bad := range []string{"<script", "href", "url(", "onload"} {
		assert.NotContains(t, svg, bad)
	}
}
