package web

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
)

// Names and labels are the agents' to choose, and a page shows each up
// to a documented length: 42 cards with 1 MiB agent names (and big
// session names, field, choice and option labels) make a page under
// 1 MB, where they made 113 MB.
func TestHostileNamesAndLabelsKeepThePageSmall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withInbox(func(o *inbox.Options) { o.MaxBytes = 1 << 30 }),
		withConfig(func(c *Config) { c.WriteTimeout = time.Minute }))
	const cards = 42
	label := strings.Repeat("L", 64<<10)
	var first inbox.CardID
	for i := range cards {
		agent := strconv.Itoa(i) + strings.Repeat("a", 1<<20)
		session := "s" + strconv.Itoa(i) + strings.Repeat("s", 16<<10)
		req := aep.Request{Kind: aep.KindForm, Prompt: "Pick one",
			Fields: []aep.FieldSpec{{ID: "f" + label, Type: aep.FieldSelect, Label: label,
				Choices: []aep.Choice{{ID: "a", Label: label}, {ID: "b" + label, Label: "B"}}}}}
		h.emit(aep.Envelope{ID: "r" + strconv.Itoa(i), Type: "attention.requested", Session: session, Agent: agent, Run: "run" + label, Data: req})
		if i == 0 {
			first = cardID(session, "r0")
		}
	}
	req := aep.Request{Kind: aep.KindPermission, Prompt: "Go?", Options: []aep.Option{{ID: "y", Label: label}, {ID: "n" + label, Label: "No"}}}
	h.emit(aep.Envelope{ID: "opts", Type: "attention.requested", Session: "s-opts", Agent: strings.Repeat("b", 1<<20), Data: req})

	bad := aep.Request{Kind: aep.KindForm, Prompt: "Broken", Fields: []aep.FieldSpec{{ID: strings.Repeat("i", 1<<20), Type: aep.FieldString}}}
	h.emit(aep.Envelope{ID: "bad", Type: "attention.requested", Session: "s-bad", Data: bad})

	// Cutting 44 MiB of names to size takes seconds under the race
	// detector on a loaded machine: the minute only ends a hang.
	page := h.getPage(&http.Client{Timeout: time.Minute}, "")
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Less(t, len(page.body), 1<<20, "the page stays under 1 MB: got %d bytes", len(page.body))
	d := page.doc(t)
	require.Equal(t, cards+2, d.Find("[data-testid=agent-name]").Length(), "every card is on the page")
	name := d.Find("#" + domID(first) + " [data-testid=agent-name]").Text()
	assert.Equal(t, view.NameRunes, len([]rune(name)), "an agent name is shown up to NameRunes: %q", name)
	assert.True(t, strings.HasPrefix(name, "0aaa") && strings.HasSuffix(name, "…"), "cut with an ellipsis: %q", name)
	assert.False(t, strings.Contains(page.body, strings.Repeat("L", form.LabelRunes+1)), "no label is shown past LabelRunes")
	assert.False(t, strings.Contains(page.body, strings.Repeat("a", view.NameRunes+1)), "no agent name is shown past NameRunes")
}
