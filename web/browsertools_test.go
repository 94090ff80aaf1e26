package web

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The markup checks need tools from outside Go: Chromium and axe-core for
// the accessibility audit, Java and the Nu Html Checker (vnu.jar) for
// validity. Each is found through an environment variable or a default
// place; a missing tool skips the test with what to install, except under
// CI=true, where it fails (.ci/run installs them).

// missingTool skips (or, under CI=true, fails) a test whose tool is absent.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a required tool is missing: "+format, args...)
	}
	t.Skipf("skipped: "+format, args...)
}

// toolsCache is the folder ../shared/tools and .ci/run install npm tools
// into: $XDG_CACHE_HOME/aepforms-tools (~/.cache/aepforms-tools).
func toolsCache() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "aepforms-tools")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "aepforms-tools")
}

// firstFile returns the first of paths that is a regular file.
func firstFile(paths ...string) string {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// findChromium returns the Chromium binary: $AEPFORMS_CHROMIUM, else
// chromium, chromium-browser, google-chrome or google-chrome-stable on PATH.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AEPFORMS_CHROMIUM"); p != "" {
		if firstFile(p) == "" {
			missingTool(t, "AEPFORMS_CHROMIUM=%s is not a file", p)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missingTool(t, "no Chromium found: install it (apt-get install -y chromium) or set AEPFORMS_CHROMIUM")
	return ""
}

// findAxe returns the path of axe.min.js: $AEPFORMS_AXE_JS, else the
// axe-core npm package in the tools cache or in /tmp/axe.
func findAxe(t *testing.T) string {
	t.Helper()
	const rel = "node_modules/axe-core/axe.min.js"
	env := os.Getenv("AEPFORMS_AXE_JS")
	p := firstFile(env, filepath.Join(toolsCache(), rel), filepath.Join("/tmp/axe", rel))
	if p == "" || (env != "" && p != env) {
		missingTool(t, "axe-core not found: run `npm install --prefix %s axe-core` or set AEPFORMS_AXE_JS to axe.min.js", toolsCache())
	}
	return p
}

// findVNU returns java and the Nu Html Checker's jar: $AEPFORMS_VNU_JAR,
// else the vnu-jar npm package in the tools cache.
func findVNU(t *testing.T) (java, jar string) {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		missingTool(t, "no java on PATH: the Nu Html Checker needs Java 11 or later (apt-get install -y default-jre-headless)")
	}
	env := os.Getenv("AEPFORMS_VNU_JAR")
	jar = firstFile(env, filepath.Join(toolsCache(), "node_modules/vnu-jar/build/dist/vnu.jar"))
	if jar == "" || (env != "" && jar != env) {
		missingTool(t, "vnu.jar not found: run `npm install --prefix %s vnu-jar` or set AEPFORMS_VNU_JAR", toolsCache())
	}
	return java, jar
}

// markupPage is one page the markup checks look at: a GET, or the page a
// refused form post answers with.
type markupPage struct {
	name string
	path string     // relative to the base
	post url.Values // non-nil: POST this form to path (the refused post's page)
	h    *harness
	c    *http.Client
}

// markupPages are the pages and panels with a card of every kind and
// state, light and dark, a refused post with its error summary, and the
// sign-in page plain and refused.
func markupPages(t *testing.T) []markupPage {
	t.Helper()
	h := newHarness(t, withConfig(func(c *Config) { c.EmbedOrigins = []string{"https://mc.example"} }))
	f := seedEveryKind(h)
	signin := newHarness(t, withToken(secret))
	refusedForm := url.Values{"token": {"fresh"}, "f0": {""}, "f2": {"5000"}, "f5": {"other"}, "f5-other": {""}, "f7": {"other"}}
	require.NotEmpty(t, f.Form)
	return []markupPage{
		{name: "page", path: "", h: h},
		{name: "page dark", path: "?theme=dark", h: h},
		{name: "panel", path: "panel", h: h},
		{name: "panel dark", path: "panel?theme=dark&agent=deployer", h: h},
		{name: "refused post", path: "cards/" + string(f.Form) + "/answer", post: refusedForm, h: h},
		{name: "refused post on a settled card", path: "cards/" + string(f.Answered) + "/answer", post: url.Values{"token": {"x"}}, h: h},
		{name: "sign-in", path: "signin", h: signin},
		{name: "sign-in refused", path: "signin", post: url.Values{"token": {"wrong"}, "name": {"mallory"}}, h: signin},
	}
}
