package webpush

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// With an audience (a routes file's team), a new question is pushed to
// its operators' devices only, and each delivery is told; a reminder
// (Renotify) goes to the audience it is given, once more.
func TestOnlyTheAudiencesDevicesArePushed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var delivered []string
	oncall := map[string]bool{"alice": true}
	p, err := New(Config{Subject: "mailto:ops@example.com", AllowLoopback: true, BasePath: "/forms/", Now: f.clock.Now,
		Audience:  func(inbox.Card) func(string) bool { return func(op string) bool { return oncall[op] } },
		Delivered: func(c inbox.Card) { delivered = append(delivered, string(c.ID)) }}, f.store)
	require.NoError(t, err)
	alice := f.subscribe(t, "/push/alice-phone", "alice")
	bob := f.subscribe(t, "/push/bob-phone", "bob")

	p.Observe(ctx, card("c1", "Deploy?", time.Time{}))
	r := f.ps.next(t, alice, bob)
	assert.Equal(t, "/push/alice-phone", r.path, "only oncall's device")
	f.ps.none(t)
	assert.Equal(t, []string{"c1"}, delivered)

	f.clock.add(time.Minute) // the device's turn again (Coalesce)
	n := p.Renotify(ctx, card("c1", "Deploy?", time.Time{}), func(op string) bool { return op == "bob" })
	assert.Equal(t, 1, n)
	r = f.ps.next(t, alice, bob)
	assert.Equal(t, "/push/bob-phone", r.path, "an escalation reaches the team it names")
	f.ps.none(t)
	assert.Equal(t, []string{"c1", "c1"}, delivered)
}
