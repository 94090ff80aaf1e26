package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// axeViolation is one failed axe-core rule with the elements it failed on.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", v.ID, v.Impact, v.Help)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "    at %v: %.200s\n      %s\n", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n      "))
	}
	return b.String()
}

// browser starts headless Chromium for the test and returns its context.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := findChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	// One deadline for the whole browser: a hung page fails the test
	// instead of hanging it.
	ctx, cancelAll := context.WithTimeout(context.Background(), 3*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancelAll() })
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		missingTool(t, "Chromium %s does not start: %v", bin, err)
	}
	return bctx
}

// consoleLog collects what a tab writes to its console.
type consoleLog struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
	wg   sync.WaitGroup
}

func watchConsole(ctx context.Context) *consoleLog {
	cl := &consoleLog{}
	msgs := chromedp.Console(ctx)
	cl.wg.Add(1)
	go func() {
		defer cl.wg.Done()
		for m, err := range msgs {
			if err != nil {
				return
			}
			cl.mu.Lock()
			cl.msgs = append(cl.msgs, m)
			cl.mu.Unlock()
		}
	}()
	return cl
}

// problems are the errors and exceptions logged so far, but for the
// status of a document the test asked for (a refused post answers 4xx on
// purpose) and the browser's own favicon probe.
func (cl *consoleLog) problems(document string) []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out []string
	for _, m := range cl.msgs {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		if m.Source == "network" && (m.URL == document || strings.HasSuffix(m.URL, "/favicon.ico")) {
			continue
		}
		out = append(out, m.String()+" "+m.URL)
	}
	return out
}

// loadPage opens p in the tab: a GET, or a form post made by the browser
// from the UI's own page (so Origin and fetch metadata are a browser's).
func loadPage(t *testing.T, ctx context.Context, p markupPage) {
	t.Helper()
	if p.post == nil {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.h.url(p.path))))
		return
	}
	start := ""
	if strings.HasPrefix(p.path, "signin") {
		start = "signin"
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(p.h.url(start))))
	fields, err := json.Marshal(p.post)
	require.NoError(t, err)
	loaded := chromedp.Events(ctx, page.LoadEventFired)
	script := fmt.Sprintf(`(() => {
		const f = document.createElement('form');
		f.method = 'post';
		f.action = %q;
		for (const [name, values] of Object.entries(%s)) {
			for (const v of values) {
				const i = document.createElement('input');
				i.type = 'hidden'; i.name = name; i.value = v;
				f.appendChild(i);
			}
		}
		document.body.appendChild(f);
		f.submit();
	})()`, p.h.url(p.path), fields)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](script))
	require.NoError(t, err)
	for _, err := range loaded {
		require.NoError(t, err, "waiting for the refused post's page")
		break
	}
}

// TestAccessibilityAudit runs axe-core in headless Chromium on every page
// and panel with cards of every kind and state, light and dark, wide and
// narrow, refused posts included: zero violations, no console error (a
// CSP violation or a script error shows there).
func TestAccessibilityAudit(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	axeJS := findAxe(t)
	axe, err := os.ReadFile(axeJS)
	require.NoError(t, err)
	bctx := browser(t)
	pages := markupPages(t)
	// At 360 px (a phone) the pages whose layout changes most.
	narrow := map[string]bool{"page": true, "panel dark": true, "refused post": true, "sign-in refused": true}

	for _, width := range []int64{1280, 360} {
		for _, p := range pages {
			if width == 360 && !narrow[p.name] {
				continue
			}
			t.Run(fmt.Sprintf("%s at %dpx", p.name, width), func(t *testing.T) {
				ctx, cancel := chromedp.NewContext(bctx)
				defer cancel()
				cl := watchConsole(ctx)
				require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)))
				loadPage(t, ctx, p)

				if p.post != nil {
					// A refused post's error summary takes focus, so a
					// keyboard or screen-reader user lands on it.
					focus, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.focus || ''`))
					require.NoError(t, err)
					if focus != "" {
						active, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ''`))
						require.NoError(t, err)
						assert.Equal(t, focus, active, "the error summary has focus after the refused post")
					}
				}

				_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(axe)))
				require.NoError(t, err, "injecting axe-core")
				var res struct {
					Violations []axeViolation `json:"violations"`
					Passes     int            `json:"passes"`
				}
				raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](
					`axe.run(document).then(r => ({violations: r.violations, passes: r.passes.length}))`, chromedp.EvalAwaitPromise))
				require.NoError(t, err, "axe.run")
				require.NoError(t, json.Unmarshal(raw, &res))
				require.Greater(t, res.Passes, 10, "axe-core checked next to nothing: is the page there?")
				var report strings.Builder
				for _, v := range res.Violations {
					report.WriteString(v.String())
				}
				assert.Empty(t, res.Violations, "axe-core violations on %s:\n%s", p.name, report.String())

				cancel()
				cl.wg.Wait()
				assert.Empty(t, cl.problems(p.h.url(p.path)), "console errors on %s (CSP violations, script errors)", p.name)
			})
		}
	}
}

// focusStep is what has focus after one Tab press.
type focusStep struct {
	Key     string `json:"key"`     // the element's index among the expected stops ("" when not one)
	Desc    string `json:"desc"`    // for messages
	Visible bool   `json:"visible"` // an outline or a box shadow shows where focus is
}

// TestKeyboardReachesEveryControlWithVisibleFocus tabs through the page
// and the panel with cards of every kind: every control (one stop per
// radio group) is reached by the keyboard alone, and each shows a visible
// focus indicator.
func TestKeyboardReachesEveryControlWithVisibleFocus(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	bctx := browser(t)
	h := newHarness(t)
	seedEveryKind(h)
	const mark = `(() => {
		const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])';
		const seenRadio = new Set();
		let n = 0;
		for (const el of document.querySelectorAll(sel)) {
			if (el.disabled || !el.checkVisibility({visibilityProperty: true})) continue;
			if (el.type === 'radio') {
				const g = (el.form ? el.form.dataset.card : '') + '/' + el.name;
				if (seenRadio.has(g)) { el.dataset.kbdGroup = g; continue; }
				seenRadio.add(g);
				el.dataset.kbdGroup = g;
			}
			el.dataset.kbd = String(n++);
		}
		window.__focused = () => {
			let a = document.activeElement;
			if (!a || a === document.body) return {key: '', desc: 'body', visible: false};
			if (a.dataset.kbdGroup) a = document.querySelector('[data-kbd-group="' + a.dataset.kbdGroup + '"][data-kbd]') || a;
			const s = getComputedStyle(document.activeElement);
			const visible = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
			return {key: a.dataset.kbd || '', desc: a.outerHTML.slice(0, 160), visible: visible};
		};
		return n;
	})()`
	for _, path := range []string{"", "panel"} {
		t.Run("/"+path, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(bctx)
			defer cancel()
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(h.url(path))))
			total, err := chromedp.Run(ctx, chromedp.Evaluate[int](mark))
			require.NoError(t, err)
			require.Greater(t, total, 20, "focusable controls on the page")
			reached := map[string]bool{}
			for i := 0; i < 4*total && len(reached) < total; i++ {
				require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
				st, err := chromedp.Run(ctx, chromedp.Evaluate[focusStep](`window.__focused()`))
				require.NoError(t, err)
				if st.Key == "" {
					continue // the browser's own chrome, or the document
				}
				if !reached[st.Key] {
					assert.True(t, st.Visible, "no visible focus on %s", st.Desc)
				}
				reached[st.Key] = true
			}
			t.Logf("reached %d of %d controls", len(reached), total)
			if len(reached) < total {
				missed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
					const r = new Set(`+jsonKeys(reached)+`);
					return Array.from(document.querySelectorAll('[data-kbd]')).filter(e => !r.has(e.dataset.kbd)).map(e => e.outerHTML.slice(0, 160));
				})()`))
				require.NoError(t, err)
				t.Errorf("the keyboard reached %d of %d controls; missed:\n%s", len(reached), total, strings.Join(missed, "\n"))
			}
		})
	}
}

// jsonKeys is the keys of m as a JSON array.
func jsonKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	b, _ := json.Marshal(keys)
	return string(b)
}
