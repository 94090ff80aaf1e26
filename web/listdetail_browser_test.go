package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/browsertest"
	"github.com/aepforms/aepforms/internal/aep"
)

// listTab opens the inbox in Chromium at width x height and waits until
// the page is live and its list of questions is drawn.
func listTab(t *testing.T, h *harness, width, height int64, path string) (context.Context, *browsertest.Console) {
	t.Helper()
	tab, cancel := chromedp.NewContext(browsertest.New(t, chromedp.WindowSize(int(width), int(height))))
	t.Cleanup(cancel)
	console := browsertest.WatchConsole(tab)
	ctx, stop := context.WithTimeout(tab, 4*time.Minute)
	t.Cleanup(stop)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(width, height),
		chromedp.Navigate(h.url(path)),
		chromedp.WaitVisible(`#connection[data-state="live"]`),
		chromedp.WaitVisible(`#qlist .qline`),
	))
	eval[bool](t, ctx, `(window.__samePage = true)`)
	return ctx, console
}

// gist is askMany's question i's first line.
func gist(i int) string { return fmt.Sprintf("Question %03d: what should the service be called?", i) }

// keysInPage presses key n times from inside the page (a keydown on what
// has focus, as a key press sends it): Chromium's input over DevTools
// waits a frame per key, and thousands of them take minutes on a loaded
// machine. The crossings that matter are pressed as keys (pressN).
func keysInPage(t *testing.T, ctx context.Context, key string, n int) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(() => { for (let i = 0; i < %d; i++) (document.activeElement || document.body).dispatchEvent(new KeyboardEvent('keydown', {key: %q, bubbles: true, cancelable: true})); return true; })()`, n, key))
}

// pressN sends key n times, in one exchange with the browser.
func pressN(t *testing.T, ctx context.Context, key string, n int) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(strings.Repeat(key, n))))
}

// selectedGist is the first line of the question selected in the list.
const selectedGist = `((document.querySelector('#qlist .qline.is-selected .qline__gist') || {}).textContent || '')`

// inViewBesideCard counts the list's lines wholly in the first screen,
// left of the selected question's card, whose top is in view too.
const inViewBesideCard = `(() => {
	const card = document.querySelector('#open .card.is-sel');
	if (!card) return -1;
	const c = card.getBoundingClientRect();
	if (c.top < 0 || c.top >= innerHeight || c.height < 200) return -2;
	return [...document.querySelectorAll('#qlist .qline')].filter(li => {
		const r = li.getBoundingClientRect();
		return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.right <= c.left;
	}).length;
})()`

// At 1440 px with 2 000 questions waiting the inbox is a dense list, one
// line per question (agent, kind, its first line, deadline), at least 15
// of them in the first screen beside the selected question's full card;
// j goes through every one of them in the list's order, on to the pages
// past the first (fetched as it goes), to question 2 000, says so past
// the last instead of wrapping, and k comes back to the first, and says
// so before it.
func TestListBesideTheCardAndKeysReachAll2000(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	askMany(h, 2000, 3)
	ctx, console := listTab(t, h, 1440, 900, "")

	n := eval[int](t, ctx, inViewBesideCard)
	assert.GreaterOrEqual(t, n, 15, "lines in the first screen beside the selected card (-1: none selected, -2: its card not in view)")
	first := eval[[]string](t, ctx, `[...document.querySelectorAll('#qlist .qline')[0].querySelectorAll('a > *')].map(e => e.textContent.trim())`)
	require.Len(t, first, 4, "agent, kind, first line, deadline")
	assert.Equal(t, "a0", first[0])
	assert.Equal(t, "Form", first[1])
	assert.Equal(t, gist(0), first[2])
	assert.Regexp(t, `left|:`, first[3])

	// j starts on the first, goes on through the rows and the next pages
	// (the page holds 550: 50 cards, 500 rows).
	press(t, ctx, "j")
	assert.Equal(t, gist(0), eval[string](t, ctx, selectedGist))
	assert.Equal(t, domID(cardID("s-a0", "r000")), eval[string](t, ctx, focusedCard), "j: the first card's heading")
	keysInPage(t, ctx, "j", 547)
	waitFor(t, ctx, selectedGist+` === '`+gist(547)+`'`, "j to reach the page's last rows")
	pressN(t, ctx, "j", 4)
	waitFor(t, ctx, selectedGist+` === '`+gist(551)+`'`, "j past the page's last row, into the next page")
	keysInPage(t, ctx, "j", 1444)
	waitFor(t, ctx, selectedGist+` === '`+gist(1995)+`'`, "j through the pages after")
	pressN(t, ctx, "j", 4)
	waitFor(t, ctx, selectedGist+` === '`+gist(1999)+`'`, "j to reach question 2 000")
	assert.Equal(t, 2000, eval[int](t, ctx, `document.querySelectorAll('#qlist .qline').length`), "every page's questions are in the list")
	waitFor(t, ctx, focusedCard+` === '`+domID(cardID("s-a1", "r1999"))+`'`, "question 2 000's card, fetched, to take focus")
	waitFor(t, ctx, `location.hash === '#`+domID(cardID("s-a1", "r1999"))+`'`, "the URL to name the selection")

	press(t, ctx, "j")
	assert.Equal(t, "No more questions waiting after this one.", eval[string](t, ctx, `document.getElementById('qlist-edge').textContent`))
	assert.Equal(t, gist(1999), eval[string](t, ctx, selectedGist), "j past the last does not wrap")

	press(t, ctx, "k")
	assert.Equal(t, gist(1998), eval[string](t, ctx, selectedGist))
	assert.Empty(t, eval[string](t, ctx, `document.getElementById('qlist-edge').textContent`), "the note goes once the selection moves")
	keysInPage(t, ctx, "k", 1997)
	waitFor(t, ctx, selectedGist+` === '`+gist(1)+`'`, "k to come back")
	press(t, ctx, "k")
	assert.Equal(t, gist(0), eval[string](t, ctx, selectedGist))
	press(t, ctx, "k")
	assert.Equal(t, "This is the first question waiting.", eval[string](t, ctx, `document.getElementById('qlist-edge').textContent`))
	assert.Equal(t, gist(0), eval[string](t, ctx, selectedGist), "k before the first does not wrap")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load through all of it")
	stopTab(t, ctx, console)
}

// At phone width the list opens a question full screen (the others out
// of sight), and Back, the page's or the browser's, returns to the list,
// on the line the operator left.
func TestPhoneListOpensAQuestionFullScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askMany(h, 12, 2)
	ctx, console := listTab(t, h, 360, 800, "")
	visible := func(sel string) bool {
		return eval[bool](t, ctx, `(() => { const e = document.querySelector('`+sel+`'); return !!e && e.getClientRects().length > 0; })()`)
	}
	line := `#qlist .qline[data-for="` + domID(ids[7]) + `"] a`
	require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(line), chromedp.Click(line)))
	waitFor(t, ctx, `document.documentElement.classList.contains('q-open')`, "the question to open full screen")
	assert.True(t, visible("#"+domID(ids[7])+` [name="f0"]`), "the question opened, its form in view")
	assert.False(t, visible("#"+domID(ids[0])), "another question out of sight")
	assert.False(t, visible("#qlist"), "the list out of sight")
	assert.True(t, visible(`[data-testid="list-back"]`), "a way back")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="list-back"]`)))
	waitFor(t, ctx, `!document.documentElement.classList.contains('q-open')`, "Back to the list")
	assert.True(t, visible("#qlist"), "the list is back")
	assert.Equal(t, domID(ids[7]), eval[string](t, ctx, `document.activeElement.parentNode.dataset.for || ''`), "on the line left")

	// The browser's own Back does the same.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#qlist .qline[data-for="`+domID(ids[2])+`"] a`)))
	waitFor(t, ctx, `document.documentElement.classList.contains('q-open')`, "the next question to open")
	require.NoError(t, chromedp.Do(ctx, chromedp.NavigateBack()))
	waitFor(t, ctx, `!document.documentElement.classList.contains('q-open')`, "the browser's Back to return to the list")
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "no page load")
	stopTab(t, ctx, console)
}

// The selection is kept by a push (a more urgent question arriving) and
// by a reload (the URL names it); the order can be the oldest first or by
// agent, and permissions can be pinned first, kept across a reload.
func TestListSelectionAndOrderSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	// Asked in this order, each a minute later; deadlines run the other
	// way for the first three.
	var ids []string
	for i, c := range []struct {
		agent string
		dl    time.Duration
		perm  bool
	}{{"zed", 30 * time.Minute, false}, {"amy", 20 * time.Minute, false}, {"kim", 10 * time.Minute, true}, {"bob", 40 * time.Minute, false}} {
		req := nameForm()
		if c.perm {
			req = permissionReq()
		}
		req.Prompt = fmt.Sprintf("Question by %s", c.agent)
		req.ExpiresAt = h.clk.Now().Add(c.dl).UTC().Format(time.RFC3339)
		h.emit(aep.Envelope{ID: fmt.Sprintf("q%d", i), Type: "attention.requested", Session: "s-" + c.agent, Agent: c.agent, Data: req})
		ids = append(ids, domID(cardID("s-"+c.agent, fmt.Sprintf("q%d", i))))
		h.clk.Add(time.Minute)
	}
	ctx, console := listTab(t, h, 1440, 900, "")
	agents := `[...document.querySelectorAll('#qlist .qline__agent')].map(e => e.textContent).join(' ')`
	assert.Equal(t, "kim amy zed bob", eval[string](t, ctx, agents), "nearest deadline first")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#qlist .qline[data-for="`+ids[0]+`"] a`)))
	waitFor(t, ctx, focusedCard+` === '`+ids[0]+`'`, "the card selected to take focus")
	req := nameForm()
	req.Prompt = "Most urgent"
	req.ExpiresAt = h.clk.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	urgent := domID(h.ask("s-new", "urgent", req))
	waitFor(t, ctx, `!!document.querySelector('#qlist .qline[data-for="`+urgent+`"]')`, "the pushed question's line")
	assert.Equal(t, "Question by zed", eval[string](t, ctx, selectedGist), "a push keeps the selection")

	chooseOrder(t, ctx, "oldest")
	waitFor(t, ctx, agents+` === 'zed amy kim bob deployer'`, "the oldest first")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#qlist-pin`)))
	waitFor(t, ctx, agents+` === 'kim zed amy bob deployer'`, "permissions pinned first")

	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#qlist .qline`)))
	assert.Equal(t, "Question by zed", eval[string](t, ctx, selectedGist), "a reload keeps the selection")
	assert.Equal(t, "kim zed amy bob deployer", eval[string](t, ctx, agents), "and the order chosen")
	chooseOrder(t, ctx, "agent")
	waitFor(t, ctx, agents+` === 'kim amy bob deployer zed'`, "by agent, permissions still first")
	stopTab(t, ctx, console)
}

// After a restart, six questions the new server does not hold leave the
// questions waiting for the "No longer open" group, each keeping what
// the operator typed; they were left among the waiting ones, each "no
// longer open" and still counted in the list.
func TestSixWithdrawnCardsLeaveTheWaitingOnes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	old := newHarness(t)
	ids := askMany(old, 8, 2)
	ctx, console := listTab(t, old, 1440, 900, "")
	for _, id := range ids[:6] {
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys("#"+domID(id)+` [name="f0"]`, "draft "+string(id[len(id)-3:]))))
	}

	addr := old.srv.Listener.Addr().String()
	old.die()
	restarted := newHarness(t, withConfig(func(c *Config) { c.PushEpoch = "e2" }))
	for i, id := range ids[6:] {
		req := nameForm()
		req.Prompt = fmt.Sprintf("Question %03d: what should the service be called?\nA second line that a row does not show.", 6+i)
		req.ExpiresAt = old.clk.Now().Add(time.Duration(7+i) * time.Minute).UTC().Format(time.RFC3339)
		agent := fmt.Sprintf("a%d", (6+i)%2)
		restarted.emit(aep.Envelope{ID: fmt.Sprintf("r%03d", 6+i), Type: "attention.requested", Session: "s-" + agent, Agent: agent, Run: "run_1", Data: req})
		_, held := restarted.in.Card(id)
		require.True(t, held, "the new server holds %s", id)
	}
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: restarted.srv.Config.Handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	waitFor(t, ctx, `document.querySelectorAll('#withdrawn-list .card').length === 6`, "six questions withdrawn into their group")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#open [data-testid="withdrawn"]').length`), "none left among the waiting")
	assert.Equal(t, "No longer open (6)", eval[string](t, ctx, `document.getElementById('withdrawn-title').textContent.trim()`))
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('#qlist .qline').length`), "the list holds the two waiting")
	for _, id := range ids[:6] {
		assert.Equal(t, "draft "+string(id[len(id)-3:]), eval[string](t, ctx, `document.querySelector('#withdrawn-list #`+domID(id)+` [name="f0"]').value`), "the draft stays")
	}
	assert.Equal(t, "2 pending", eval[string](t, ctx, `document.getElementById('pending-count').textContent`))
	assert.True(t, eval[bool](t, ctx, `window.__samePage === true`), "reconciled in place")
	_ = console // the old server's end shows as failed loads
}

// chooseOrder picks the list's order as the operator does.
func chooseOrder(t *testing.T, ctx context.Context, value string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(`#qlist-order`, value)))
	eval[bool](t, ctx, `document.getElementById('qlist-order').dispatchEvent(new Event('change', {bubbles: true}))`)
}

// On a page after the first, k before its first question goes on to the
// previous page's last question, as j past the last goes on to the next
// page's first: it does not say "This is the first question waiting"
// while earlier questions wait on the page before.
func TestKGoesBackToThePreviousPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t, withConfig(func(c *Config) { c.PageCards = 5; c.PageRows = 10 }))
	askMany(h, 40, 2) // pages: 0–14 (5 cards, 10 rows), 15–24, 25–34, 35–39
	ctx, console := listTab(t, h, 1440, 900, "")
	next := func() string {
		t.Helper()
		return eval[string](t, ctx, `document.querySelector('[data-testid="pager"] a[data-testid="next-page"]').href`)
	}
	goPage := func(u string) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(`#connection[data-state="live"]`), chromedp.WaitVisible(`#qlist .qline`)))
	}
	second := next()
	goPage(second)
	third := next()
	goPage(third)

	press(t, ctx, "k")
	waitFor(t, ctx, selectedGist+` === '`+gist(25)+`'`, "k to select the third page's first question")
	press(t, ctx, "k")
	// A page load: waits that outlive it (inFrame).
	inFrame(t, ctx, `location.href.startsWith('`+second+`') && document.getElementById('connection') && document.getElementById('connection').dataset.state === 'live' && !!document.querySelector('#qlist .qline')`,
		"k before the first to go on to the second page, live")
	waitFor(t, ctx, selectedGist+` === '`+gist(24)+`'`, "the second page's last question selected")
	assert.Empty(t, eval[string](t, ctx, `document.getElementById('qlist-edge').textContent`), "no 'first question' said")

	pressN(t, ctx, "k", 9)
	waitFor(t, ctx, selectedGist+` === '`+gist(15)+`'`, "k up the second page")
	press(t, ctx, "k")
	inFrame(t, ctx, `!location.search.includes('after=') && document.getElementById('connection') && document.getElementById('connection').dataset.state === 'live' && !!document.querySelector('#qlist .qline')`,
		"k before the second page's first to go on to the first page, live")
	waitFor(t, ctx, selectedGist+` === '`+gist(14)+`'`, "the first page's last question selected")
	press(t, ctx, "k")
	waitFor(t, ctx, selectedGist+` === '`+gist(13)+`'`, "k goes on up the first page")
	stopTab(t, ctx, console)
}
