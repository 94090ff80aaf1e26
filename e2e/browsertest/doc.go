// Package browsertest runs the markup checks that need tools from outside
// Go: headless Chromium (through the DevTools protocol, with chromedp),
// axe-core for accessibility, and the Nu Html Checker (vnu.jar, on Java)
// for HTML validity. It is test support: tests of any package, the e2e
// tests and benchmarks import it; the program never does.
//
// Each tool is found through an environment variable or a default place
// (see Chromium, AxeJS and VNU). A missing tool skips the test with what to
// install, except under CI=true, where it fails it: .ci/run installs them
// all. Every function takes the testing.TB it reports to and cleans up
// through tb.Cleanup.
package browsertest
