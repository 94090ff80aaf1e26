package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Timeout bounds the whole life of a browser New starts, so a hung page
// fails the test instead of hanging it. It only ends a hang: one browser
// serves a whole test (the accessibility audit loads some forty pages),
// and on a loaded machine that took more than three minutes.
const Timeout = 6 * time.Minute

// New starts headless Chromium (found by Chromium) for tb and returns the
// context of its first tab; open more tabs with chromedp.NewContext on it.
// The browser runs with chromedp's automation defaults and --headless
// --no-sandbox --disable-gpu --disable-quic --no-first-run
// --disable-background-networking --disable-component-update
// --disable-sync, a fresh --user-data-dir under tb.TempDir() and a
// 1280x900 window, within Timeout; extra options come last (a later flag
// wins). It is stopped by tb.Cleanup. A browser that does not start is
// Missing.
func New(tb testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	tb.Helper()
	return start(tb, append(chromedp.DefaultExecAllocatorOptions[:], extra...))
}

// NewAsShipped is New without chromedp's automation defaults (which,
// among others, turn site isolation off): Chromium with the settings a
// person's browser has, cookie policy included. Cross-origin frames are
// then their own targets (attach to them to run script inside).
func NewAsShipped(tb testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	tb.Helper()
	return start(tb, extra)
}

func start(tb testing.TB, extra []chromedp.ExecAllocatorOption) context.Context {
	tb.Helper()
	bin := Chromium(tb)
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1280, 900),
	}, extra...)
	ctx, cancelAll := context.WithTimeout(context.Background(), Timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The allocator's cancel waits for the browser to exit, before
	// TempDir's own clean-up (registered earlier, so run later) removes
	// its profile.
	tb.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancelAll() })
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		Missing(tb, "Chromium %s does not start: %v", bin, err)
	}
	return bctx
}

// PostForm makes the tab's current page post fields to action as a form
// the browser submits itself (so Origin and fetch metadata are a
// browser's, as for a person's click), and waits for the page the post
// answers with to load. action is an absolute URL.
func PostForm(tb testing.TB, ctx context.Context, action string, fields url.Values) {
	tb.Helper()
	raw, err := json.Marshal(fields)
	require.NoError(tb, err)
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
	})()`, action, raw)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](script))
	require.NoError(tb, err, "submitting the form to %s", action)
	for _, err := range loaded {
		require.NoError(tb, err, "waiting for the page %s answers with", action)
		break
	}
}

// Console collects what one tab writes to its console, from WatchConsole
// until the tab's context ends.
type Console struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
	done chan struct{}
}

// WatchConsole starts collecting the console messages of the tab ctx
// belongs to. The collecting goroutine ends with the tab's context; Wait
// waits for it.
func WatchConsole(ctx context.Context) *Console {
	c := &Console{done: make(chan struct{})}
	msgs := chromedp.Console(ctx)
	go func() {
		defer close(c.done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
		}
	}()
	return c
}

// Wait blocks until the tab's context has ended and every message the tab
// logged is collected. Cancel the tab first.
func (c *Console) Wait() { <-c.done }

// Problems returns the errors and exceptions logged so far, each as the
// message and its URL, but for network errors about the documents in
// ignore (a page the test asked for that answers 4xx on purpose) and the
// browser's own /favicon.ico probe. A CSP violation or a script error
// shows here.
func (c *Console) Problems(ignore ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		if m.Source == "network" && (slices.Contains(ignore, m.URL) || strings.HasSuffix(m.URL, "/favicon.ico")) {
			continue
		}
		out = append(out, m.String()+" "+m.URL)
	}
	return out
}
