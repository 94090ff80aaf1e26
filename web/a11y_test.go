package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
)

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
	browsertest.PostForm(t, ctx, p.h.url(p.path), p.post)
}

// TestAccessibilityAudit runs axe-core in headless Chromium on every page
// and panel with cards of every kind and state, light and dark, wide and
// narrow, refused posts included: zero violations, no console error (a
// CSP violation or a script error shows there).
func TestAccessibilityAudit(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	browsertest.AxeJS(t) // skip before starting anything when axe-core is missing
	bctx := browsertest.New(t)
	pages := markupPages(t)
	// At 360 px (a phone) the pages whose layout changes most.
	narrow := map[string]bool{"page": true, "panel dark": true, "refused post": true, "sign-in refused": true, "rules": true, "refused rule part": true}

	for _, width := range []int64{1280, 360} {
		for _, p := range pages {
			if width == 360 && !narrow[p.name] {
				continue
			}
			t.Run(fmt.Sprintf("%s at %dpx", p.name, width), func(t *testing.T) {
				ctx, cancel := chromedp.NewContext(bctx)
				defer cancel()
				console := browsertest.WatchConsole(ctx)
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

				violations := browsertest.Axe(t, ctx)
				assert.Empty(t, violations, "axe-core violations on %s:\n%s", p.name, violations)

				cancel()
				console.Wait()
				assert.Empty(t, console.Problems(p.h.url(p.path)), "console errors on %s (CSP violations, script errors)", p.name)
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
	bctx := browsertest.New(t)
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
