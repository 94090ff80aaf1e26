package browsertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Missing skips tb because a tool it needs is absent, saying what to
// install; under CI=true (where .ci/run installs every tool) it fails tb
// instead, so a broken CI machine cannot pass by skipping.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true and a required tool is missing: "+format, args...)
		return
	}
	tb.Skipf("skipped: "+format, args...)
}

// ToolsCache is the folder ../shared/tools and .ci/run install the npm
// tools (axe-core, vnu-jar) into: $XDG_CACHE_HOME/aepforms-tools, else
// ~/.cache/aepforms-tools; "" when neither can be known.
func ToolsCache() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "aepforms-tools")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "aepforms-tools")
}

// Chromium returns the Chromium binary: $AEPFORMS_CHROMIUM, else the first
// of chromium, chromium-browser, google-chrome and google-chrome-stable on
// PATH. None found: Missing.
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("AEPFORMS_CHROMIUM"); p != "" {
		if firstFile(p) == "" {
			Missing(tb, "AEPFORMS_CHROMIUM=%s is not a file", p)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(tb, "no Chromium found: install it (apt-get install -y chromium) or set AEPFORMS_CHROMIUM")
	return ""
}

// AxeJS returns the path of axe-core's axe.min.js: $AEPFORMS_AXE_JS, else
// the axe-core npm package in ToolsCache or in /tmp/axe. Not found (or
// $AEPFORMS_AXE_JS not a file): Missing.
func AxeJS(tb testing.TB) string {
	tb.Helper()
	const rel = "node_modules/axe-core/axe.min.js"
	env := os.Getenv("AEPFORMS_AXE_JS")
	p := firstFile(env, filepath.Join(ToolsCache(), rel), filepath.Join("/tmp/axe", rel))
	if p == "" || (env != "" && p != env) {
		Missing(tb, "axe-core not found: run `npm install --prefix %s axe-core` or set AEPFORMS_AXE_JS to axe.min.js", ToolsCache())
	}
	return p
}

// VNU returns java (from PATH) and the Nu Html Checker's jar:
// $AEPFORMS_VNU_JAR, else the vnu-jar npm package in ToolsCache. Either
// absent: Missing.
func VNU(tb testing.TB) (java, jar string) {
	tb.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		Missing(tb, "no java on PATH: the Nu Html Checker needs Java 11 or later (apt-get install -y default-jre-headless)")
	}
	env := os.Getenv("AEPFORMS_VNU_JAR")
	jar = firstFile(env, filepath.Join(ToolsCache(), "node_modules/vnu-jar/build/dist/vnu.jar"))
	if jar == "" || (env != "" && jar != env) {
		Missing(tb, "vnu.jar not found: run `npm install --prefix %s vnu-jar` or set AEPFORMS_VNU_JAR", ToolsCache())
	}
	return java, jar
}

// firstFile returns the first of paths that is a regular file, or "".
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
