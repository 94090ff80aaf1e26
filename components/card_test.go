package components

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

func TestCardRoot(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cform"), answerable())
	card := doc.Find(`article[data-testid="card"]`)
	require.Equal(t, 1, card.Length())
	assert.Equal(t, "card-cform", attr(t, card, "id"), "the push protocol's key")
	assert.Equal(t, "cform", attr(t, card, "data-card"))
	assert.Equal(t, "1", attr(t, card, "data-version"))
	assert.Equal(t, "true", attr(t, card, "data-open"))
	assert.Equal(t, "false", attr(t, card, "data-settled"))
	assert.Regexp(t, `^group-[0-9a-f]{16}$`, attr(t, card, "data-group"))
	assert.Equal(t, "claude-code · session s_payments", attr(t, card, "data-group-label"))
	assert.NotEmpty(t, attr(t, card, "data-sort"))
	title := doc.Find("#" + attr(t, card, "aria-labelledby"))
	assert.Equal(t, "Form Before I deploy the payments service, I need a few details.", squash(title.Text()), "the question is the heading, the kind its tag")
	assert.Equal(t, "Form", title.Find(`[data-testid="kind"]`).Text())
	assert.Equal(t, 1, title.Find(`bdi[data-testid="question"]`).Length(), "the question is the agent's words, isolated")

	meta := doc.Find(`[data-testid="meta"]`)
	require.Equal(t, 1, meta.Length(), "one provenance line")
	assert.Equal(t, []string{"asked 2 min ago", "answer by 12:04 UTC"}, texts(meta.Children()), "the group heading names agent and session: not repeated; the header, not the card, says the relay's state")
	assert.Equal(t, "unknown", attr(t, meta, "data-reach"), "no roster yet: unknown, for the script, in no words")
	assert.Equal(t, 0, doc.Find(`.prompt__who`).Length(), "no “X asks:” line")

	details := doc.Find(`details[data-testid="details"]`)
	require.Equal(t, 1, details.Length())
	assert.Equal(t, "Details", details.Find("summary").Text())
	prov := details.Find(`[data-testid="provenance"]`)
	require.Equal(t, 1, prov.Length(), "run, source, capture and ids behind the disclosure")
	assert.Equal(t, "claude-code", prov.Find(`[data-testid="agent-name"]`).Text())
	assert.Equal(t, "r_cform", prov.Find(`[data-testid="prov-request"]`).Text())
	assert.Equal(t, "cform", prov.Find(`[data-testid="prov-card"]`).Text())
	assert.Equal(t, "run_7", prov.Find(`[data-testid="prov-run"]`).Text())
	src := prov.Find(`[data-testid="prov-source"]`)
	assert.Equal(t, "aep://demo.example/agents/claude-code/instance-0001", attr(t, src, "title"), "full source in the title")
	assert.Contains(t, src.Text(), "…")
	asked := meta.Find(`time[datetime]`).First()
	assert.Equal(t, "2026-03-01T11:58:00Z", attr(t, asked, "datetime"))
	assert.Equal(t, "2 min ago", asked.Text())
	assert.Equal(t, "1 Mar 2026 11:58:00 UTC", prov.Find(`[data-testid="prov-asked"]`).Text())
	assert.Equal(t, "full", prov.Find(`[data-testid="prov-capture"]`).Text())

	cd := doc.Find(`[data-testid="countdown"]`)
	require.Equal(t, 1, cd.Length())
	assert.Equal(t, "2026-03-01T12:04:30Z", attr(t, cd.Find("time"), "data-deadline"))
	assert.Equal(t, "answer by 12:04 UTC", cd.Text(), "without the script, a time of day")
	assert.False(t, cd.HasClass("is-soon"))

	prompt := doc.Find(`blockquote[data-testid="prompt"] p`)
	assert.Equal(t, "Before I deploy the payments service, I need a few details.The change touches the checkout flow.", prompt.Text())
	assert.Equal(t, 1, prompt.Find("br").Length(), "line breaks kept")
	assert.Equal(t, 1, doc.Find(`[data-action="hide"][hidden]`).Length(), "hide, revealed by the script")
}

func TestCardCountdownSoon(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cperm"), answerable())
	cd := doc.Find(`[data-testid="countdown"]`)
	assert.True(t, cd.HasClass("is-soon"), "amber under a minute")
	assert.Equal(t, "answer by 12:00 UTC", cd.Text())
	assert.Equal(t, "warning", doc.Find(`[data-testid="meta"] [data-testid="severity"]`).Text(), "a warning shows on the provenance line")
}

func TestCardOptionButtons(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cperm"), answerable())
	form := doc.Find("form")
	require.Equal(t, 1, form.Length())
	buttons := form.Find(`button[data-testid="option"]`)
	require.Equal(t, 3, buttons.Length())
	assert.Equal(t, []string{"option", "option", "option"}, vals(buttons, "name"))
	assert.Equal(t, []string{"0", "1", "2"}, vals(buttons, "value"))
	assert.Equal(t, []string{"submit", "submit", "submit"}, vals(buttons, "type"))
	assert.Equal(t, []string{"Allow once", "Always allow", "Deny"}, texts(buttons))
	assert.Equal(t, []string{"secondary", "secondary", "deny"}, vals(buttons, "data-style"), "a permission puts no option forward")
	assert.True(t, buttons.Eq(2).HasClass("button--deny"), "deny styled destructive")
	assert.Equal(t, "true", buttons.Eq(2).AttrOr("data-refusing", ""), "the one refusing option is marked")
	assert.Equal(t, 0, form.Find(`.button--primary`).Length(), "no option pre-emphasised")
	assert.Equal(t, 0, form.Find(`[data-testid="submit"]`).Length(), "options and the note-only button are the only submits")
	// The note: a textarea behind a disclosure, and a button that sends it alone.
	note := form.Find(`details[data-testid="note"]`)
	require.Equal(t, 1, note.Length())
	assert.False(t, has(note, "open"))
	assert.Equal(t, "Add a note", squash(note.Find("summary").Text()))
	ta := note.Find(`textarea[name="text"]`)
	require.Equal(t, 1, ta.Length())
	assert.False(t, has(ta, "required"))
	only := note.Find(`button[data-testid="note-only"]`)
	assert.Equal(t, "submit", attr(t, only, "type"))
	assert.False(t, has(only, "name"), "the note-only button posts no option")
	assert.Equal(t, "Send the note only", squash(only.Text()))
}

func TestCardFreeTextReply(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"cinput", "cnofields", "cvendor"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			doc := cardDoc(t, sample(t, id), answerable())
			ta := doc.Find(`form textarea[name="text"]`)
			require.Equal(t, 1, ta.Length(), "a free-text reply")
			assert.Equal(t, id+"-text", attr(t, ta, "id"))
			assert.True(t, has(ta, "required"))
			assert.Equal(t, "Your answer (required)", squash(doc.Find(`label[for="`+id+`-text"]`).Text()))
			assert.Equal(t, 1, doc.Find(`form [data-testid="submit"]`).Length())
		})
	}
}

func TestCardWithoutSubmit(t *testing.T) {
	t.Parallel()
	watch := answerable()
	watch.Viewer = inbox.Viewer{WatchOnly: true}
	cases := []struct {
		name   string
		id     string
		opts   view.Options
		state  string
		notice string
	}{
		{"informational oob", "coob", answerable(), "info", ""},
		{"watch-only form", "cform", watch, "pending", "Watch-only"},
		{"watch-only permission", "cperm", watch, "pending", "Watch-only"},
		{"malformed", "cbad", answerable(), "malformed", ""},
		{"sending", "csending", answerable(), "sending", ""},
		{"settled", "canswered", answerable(), "answered", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := cardDoc(t, sample(t, tc.id), tc.opts)
			assert.Equal(t, 0, doc.Find("form").Length(), "nothing to post")
			assert.Equal(t, 0, doc.Find(`button[type="submit"], [data-testid="submit"], button[data-testid="option"]`).Length(), "no submit")
			for _, c := range doc.Find("input, textarea, select").EachIter() {
				assert.True(t, has(c, "disabled"), "control %s shown disabled", c.AttrOr("id", ""))
			}
			assert.Equal(t, tc.state, attr(t, doc.Find(`[data-testid="state"]`), "data-state"))
			if tc.notice != "" {
				assert.Contains(t, doc.Find(`[data-testid="card-notice"]`).Text(), tc.notice, "says so on the card")
			}
		})
	}
	// The watch-only permission card still lists its options, deny apart.
	doc := cardDoc(t, sample(t, "cperm"), watch)
	items := doc.Find(`[data-testid="option-item"]`)
	assert.Equal(t, []string{"Allow once", "Always allow", "Deny"}, texts(items))
	assert.Equal(t, "deny", attr(t, items.Eq(2), "data-style"))
}

func TestCardMalformed(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cbad"), answerable())
	state := doc.Find(`[data-testid="state"]`)
	assert.Equal(t, "malformed", attr(t, state, "data-state"))
	assert.Equal(t, `This request is malformed and cannot be answered: field "a": a select needs at least one choice`, squash(state.Find(`[data-testid="state-text"]`).Text()))
	assert.Equal(t, "Pick one", doc.Find(`[data-testid="question"]`).Text(), "the prompt is still shown, as the heading")
	assert.Equal(t, 0, doc.Find(`[data-testid="field"]`).Length())
}

func TestCardStateLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id, state, text, quote string
	}{
		{"csending", "sending", "Sent, waiting for the agent", ""},
		{"caccepted", "accepted", "The agent accepted the answer; waiting for it to record it", ""},
		{"crejected", "rejected", "The agent did not accept the answer. Correct it below and send it again.", "replicas must be even for the quorum"},
		{"cnoroute", "failed", "Not delivered: the agent is not connected. Your answer is kept.", ""},
		{"canswered", "answered", "Answered by alice from this page", ""},
		{"celsewhere", "answered", "Answered elsewhere by bob in the agent's own window", ""},
		{"ctimeout", "timed-out", "Timed out: the agent stopped waiting after 5 min", ""},
		{"cexpired", "expired", "Expired: the deadline passed without an answer", ""},
		{"cended", "session-ended", "The session ended before this was answered", ""},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			doc := cardDoc(t, sample(t, tc.id), answerable())
			st := doc.Find(`[data-testid="state"]`)
			require.Equal(t, 1, st.Length())
			assert.Equal(t, tc.id+"-state", attr(t, st, "id"))
			assert.Equal(t, tc.state, attr(t, st, "data-state"))
			assert.Equal(t, "polite", attr(t, st, "aria-live"))
			assert.Equal(t, tc.text, squash(st.Find(`[data-testid="state-text"]`).Text()))
			assert.Equal(t, tc.quote, st.Find(`[data-testid="state-quote"]`).Text(), "the agent's words quoted")
		})
	}

	// The rejected card keeps the operator's answer in the form, ready to resend.
	doc := cardDoc(t, sample(t, "crejected"), answerable())
	assert.Equal(t, "3", attr(t, doc.Find(`input[name="f0"]`), "value"))
	assert.Equal(t, "true", attr(t, doc.Find("form"), "data-kept"))
	assert.Equal(t, 1, doc.Find(`[data-testid="submit"]`).Length())

	// Sending shows the submitted answer and a spinner for the script.
	doc = cardDoc(t, sample(t, "csending"), answerable())
	assert.Equal(t, 1, doc.Find(`[data-testid="state"] .spinner[aria-hidden="true"]`).Length())
	assert.Equal(t, []string{"Environment: Staging"}, pairs(doc.Find(`[data-testid="values"] .values__item`)))
}

func TestCardSettledCompact(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "canswered"), answerable())
	card := doc.Find(`[data-testid="card"]`)
	assert.True(t, card.HasClass("card--settled"))
	assert.Equal(t, "true", attr(t, card, "data-settled"))
	values := doc.Find(`[data-testid="values"] .values__item`)
	assert.Equal(t, []string{"Ship now: Yes", "Reason: withheld", "Canary percent: 12.5"}, pairs(values), "withheld values say so")
	assert.Equal(t, 1, doc.Find(`[data-testid="withheld"]`).Length())
	details := doc.Find(`details[data-testid="details"]`)
	require.Equal(t, 1, details.Length(), "the question behind a disclosure")
	assert.Equal(t, "Ship it?", doc.Find(`h3 [data-testid="question"]`).Text(), "the question is the heading")
	assert.Equal(t, 0, details.Find(`[data-testid="prompt"]`).Length(), "a one-line prompt is all heading: not repeated")
	assert.Equal(t, 1, details.Find(`[data-testid="provenance"]`).Length())
}

// A settled card says what was asked in its heading and which agent and
// session it came from (it sits under no group heading), without opening
// its details.
func TestCardSettledQuestion(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "ctimeout"), answerable())
	h := doc.Find(`[data-testid="card"] h3`)
	assert.Equal(t, "Question Tag name?", squash(h.Text()))
	meta := doc.Find(`[data-testid="card"] > [data-testid="meta"]`)
	require.Equal(t, 1, meta.Length())
	assert.Equal(t, []string{"release-bot", "session s_notes", "asked 2 min ago"}, texts(meta.Children()), "who, where and when, in one line")
	assert.Equal(t, "s_notes", attr(t, meta.Find("span[title]"), "title"))
	assert.True(t, meta.Next().Is(`[data-testid="state"]`), "the outcome follows")
	assert.Equal(t, 0, meta.Find(`[data-testid="countdown"]`).Length(), "no deadline on a settled card")
}

// A card shows one of four reaches beside its agent, and an open card
// that cannot take an answer now says why.
func TestCardReachability(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reach      inbox.Reach
		kind, text string // text "": the card says nothing of its agent's reach
		note       string // a substring of the card's note; "" = none
	}{
		{inbox.ReachConnected, "yes", "", ""},
		{inbox.ReachNoControl, "no-control", "connected, takes no answers here",
			"The agent is connected but takes no answers over the relay (it does not accept control.attention.respond): an answer sent now will be refused."},
		{inbox.ReachAmbiguous, "ambiguous", "claimed by more than one agent", "More than one agent claims this session"},
		{inbox.ReachNotConnected, "no", "not connected", "The agent is not connected"},
		{inbox.ReachUnknown, "unknown", "", ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			o := answerable()
			o.Reachable = tc.reach
			doc := cardDoc(t, sample(t, "cinput"), o)
			assert.Equal(t, tc.kind, attr(t, doc.Find(`[data-testid="meta"]`), "data-reach"))
			reach := doc.Find(`[data-testid="reach"]`)
			assert.Equal(t, tc.text, reach.Text())
			if tc.text == "" {
				// Connected is the usual case, unknown the relay's state
				// (the header's): a badge on every card would go stale.
				assert.Zero(t, doc.Find(`.reach`).Length(), "no badge, in the line or the details")
			} else {
				assert.Equal(t, tc.kind, attr(t, reach, "data-reach"))
			}
			notes := doc.Find(`[data-testid="card-notice"]`)
			if tc.note == "" {
				assert.Equal(t, 0, notes.Length(), "no note: got %q", notes.Text())
				return
			}
			assert.Contains(t, notes.Text(), tc.note)
		})
	}
	o := answerable()
	o.Viewer = inbox.Viewer{WatchOnly: true}
	assert.Equal(t, 0, cardDoc(t, sample(t, "cinput"), o).Find(`[data-testid="reach"]`).Length(),
		"watch-only: reach does not matter, so none is shown")
}

func TestCardsHaveNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	for _, c := range sampleCards() {
		doc := cardDoc(t, c, answerable())
		assert.Equal(t, 0, doc.Find("script, style, [style]").Length(), "card %s", c.ID)
		for _, s := range doc.Find("*").EachIter() {
			for _, a := range s.Nodes[0].Attr {
				assert.NotRegexp(t, `^on`, a.Key, "card %s: inline handler %s", c.ID, a.Key)
			}
		}
	}
}

// pairs reads definition list items as "term: value".
func pairs(s *goquery.Selection) []string {
	var out []string
	for _, e := range s.EachIter() {
		out = append(out, squash(e.Find("dt").Text())+": "+squash(e.Find("dd").Text()))
	}
	return out
}

// A refused post on a card that shows no form (settled, in flight,
// malformed, informational, expired) names the problem on the card, at
// its top, under the heading the summary always has.
func TestCardRefusalSummaryWithoutForm(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"canswered", "celsewhere", "ctimeout", "cexpired", "csending", "caccepted", "cbad", "coob"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			o := answerable()
			o.Problems = []aep.Problem{{Code: "settled", Message: "This question was already answered by bob. Nothing was sent."}}
			doc := cardDoc(t, sample(t, id), o)
			sum := doc.Find(`[data-testid="card"] > [data-testid="error-summary"]`)
			require.Equal(t, 1, sum.Length(), "the summary is on the card itself")
			assert.Equal(t, id+"-errors", attr(t, sum, "id"))
			assert.Equal(t, "-1", attr(t, sum, "tabindex"), "focusable by the script")
			assert.Equal(t, "There is a problem", sum.Find("#"+id+"-errors-title").Text())
			assert.Equal(t, "This question was already answered by bob. Nothing was sent.", squash(sum.Find("li").Text()))
			assert.Equal(t, 0, sum.Find("a").Length(), "no link: the card has no control to jump to")
			assert.True(t, sum.Prev().Is("header.card__head"), "the summary comes first, under the card's heading")
			assert.Equal(t, 0, doc.Find(`[data-testid="submit"], [data-testid="option"]`).Length(), "still nothing to submit")
		})
	}
}

// A settled card this UI answered says who answered it and when (the
// exact time in a title), and links to the answer's history entry; a
// card answered elsewhere says neither.
func TestCardSettledSaysWhoAnsweredHere(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "chere"), answerable())
	by := doc.Find(`[data-testid="answered-by"]`)
	require.Equal(t, 1, by.Length(), "who answered, on the settled card")
	assert.Contains(t, by.Text(), "Sent by")
	assert.Equal(t, "alice", strings.TrimSpace(by.Find(`[data-testid="answered-by-name"]`).Text()))
	at := by.Find(`time[data-testid="answered-at"]`)
	assert.Equal(t, "3 min ago", strings.TrimSpace(at.Text()))
	assert.Equal(t, "1 Mar 2026 11:57:00 UTC", attr(t, at, "title"), "the exact time in a title")
	assert.Equal(t, "2026-03-01T11:57:00Z", attr(t, at, "datetime"))
	link := by.Find(`a[data-testid="history-entry"]`)
	assert.Equal(t, "/forms/history?session=s_rollout#"+view.HistoryAnchor("cmd-here"), attr(t, link, "href"))
	assert.Contains(t, doc.Find(`[data-testid="values"]`).Text(), "Allow once", "the recorded option by its label")

	noHistory := answerable()
	noHistory.NoHistory = true
	by = cardDoc(t, sample(t, "chere"), noHistory).Find(`[data-testid="answered-by"]`)
	require.Equal(t, 1, by.Length())
	assert.Zero(t, by.Find(`a`).Length(), "no journal: no history entry to link to")

	for _, id := range []string{"celsewhere", "canswered", "ctimeout"} {
		assert.Zero(t, cardDoc(t, sample(t, id), answerable()).Find(`[data-testid="answered-by"]`).Length(), "%s: not answered from this UI", id)
	}
}
