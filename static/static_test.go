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

// The dark palette is written twice (system dark, and [data-theme=dark]);
// the two copies must not drift apart.
func TestDarkPalettesMatch(t *testing.T) {
	t.Parallel()
	b, err := fs.ReadFile(FS, "app.css")
	require.NoError(t, err)
	css := string(b)
	system := block(t, css, `:root:not([data-theme="light"]) {`)
	forced := block(t, css, `:root[data-theme="dark"] {`)
	assert.Equal(t, decls(system), decls(forced))
	assert.Contains(t, system, "color-scheme: dark")
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
