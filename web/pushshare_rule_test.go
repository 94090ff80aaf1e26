package web

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// A card a rule answered is framed with "Answered by rule …" even when
// the browser that happens to frame it is leaving: the rule's lookup is
// the frame's, shared by every browser of the operator, not the leaving
// browser's (its cancelled context once drew the card without the rule,
// for every browser, until the minute turned).
func TestARulesCardIsFramedWholeWhenItsFramerLeaves(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t)
	require.NoError(t, rh.j.CreateRule(context.Background(), store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
		Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", ""), Answer: aep.Answer{Option: "allow"}}, 0))
	id := rh.ask("s1", "r1", permissionReq())
	rh.observe(id)
	c, _ := rh.in.Card(id)
	rh.settle(*c.Submission)
	card, _ := rh.in.Card(id)
	cfg := rh.cfg
	cfg.defaults()
	p := newPages(cfg, Deps{Inbox: rh.in, Submitter: rh.sub, Rules: rh.runner})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	leaving := httptest.NewRequest(http.MethodGet, "/push", nil).WithContext(ctx)
	parts, err := p.cardFrame(leaving, "", newPushShare(), 7, card)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(bytes.Join(parts, nil), []byte(`data-testid="answered-by-rule"`)), "the card names its rule")
}
