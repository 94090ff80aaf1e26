package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>good</title></head>
<body><main><h1>Deploy</h1>
<form method="post" action="/answer"><label for="env">Environment</label>
<input id="env" name="env"><button>Send</button></form></main></body></html>`

// badPage has an unlabelled input, a script error and an image without alt text.
const badPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bad</title></head>
<body><main><h1>Deploy</h1><img src="/x.png"><input name="env">
<script>undefinedFunction()</script></main></body></html>`

func server(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /good", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, goodPage) })
	mux.HandleFunc("GET /bad", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, badPage) })
	mux.HandleFunc("GET /x.png", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("Content-Type", "image/png") })
	mux.HandleFunc("POST /answer", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>refused</title></head><body><main><h1 id="got">%s %s</h1></main></body></html>`,
			r.PostFormValue("env"), r.Header.Get("Origin"))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	srv := server(t)
	bctx := New(t)

	t.Run("a good page: no violations, no console problems", func(t *testing.T) {
		ctx, cancel := chromedp.NewContext(bctx)
		defer cancel()
		console := WatchConsole(ctx)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/good")))
		vs := Axe(t, ctx)
		assert.Empty(t, vs, "violations:\n%s", vs)
		cancel()
		console.Wait()
		assert.Empty(t, console.Problems())
	})

	t.Run("a bad page: violations and a script error", func(t *testing.T) {
		ctx, cancel := chromedp.NewContext(bctx)
		defer cancel()
		console := WatchConsole(ctx)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/bad")))
		var ids []string
		for _, v := range Axe(t, ctx) {
			ids = append(ids, v.ID)
		}
		assert.Contains(t, ids, "image-alt")
		assert.Contains(t, ids, "label")
		cancel()
		console.Wait()
		assert.NotEmpty(t, console.Problems(), "the script error")
	})

	t.Run("a form posted by the browser", func(t *testing.T) {
		ctx, cancel := chromedp.NewContext(bctx)
		defer cancel()
		console := WatchConsole(ctx)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/good")))
		PostForm(t, ctx, srv.URL+"/answer", url.Values{"env": {"staging"}})
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('got').textContent`))
		require.NoError(t, err)
		assert.Equal(t, "staging "+srv.URL, got, "the posted value and the browser's Origin")
		cancel()
		console.Wait()
		assert.NotEmpty(t, console.Problems(), "the 422 is logged")
		assert.Empty(t, console.Problems(srv.URL+"/answer"), "but for the document asked to be ignored")
	})
}

func TestValidateHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts the Nu Html Checker")
	}
	errs := checkHTML(t, []Document{
		{Name: "good", HTML: goodPage},
		Fragment("fragment", `<article id="a"><p>text</p></article>`),
		{Name: "bad", HTML: `<!DOCTYPE html><html lang="en"><head><title>bad</title></head><body><p><div></div></p></body></html>`},
	})
	require.NotEmpty(t, errs)
	for _, e := range errs {
		assert.Equal(t, "bad", e.Document, "only the bad document has errors: %+v", e)
		assert.Positive(t, e.Line)
	}
}

// tbRecorder is a testing.TB that records Fatalf and Skipf instead of
// ending the test.
type tbRecorder struct {
	testing.TB
	fatal, skip string
}

func (r *tbRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *tbRecorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		ci        string
		fatal     bool
		wantInMsg string
	}{
		{ci: "", fatal: false, wantInMsg: "skipped: no frobnicator"},
		{ci: "false", fatal: false, wantInMsg: "skipped: no frobnicator"},
		{ci: "true", fatal: true, wantInMsg: "CI=true and a required tool is missing: no frobnicator"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &tbRecorder{TB: t}
			Missing(r, "no %s", "frobnicator")
			if tc.fatal {
				assert.Equal(t, tc.wantInMsg, r.fatal)
				assert.Empty(t, r.skip)
			} else {
				assert.Equal(t, tc.wantInMsg, r.skip)
				assert.Empty(t, r.fatal)
			}
		})
	}
}
