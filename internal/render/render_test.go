package render

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// The fragment cache is bounded by bytes, not only by count: cards of
// large prompts (each near its 16 KiB budget) rendered in many versions
// keep at most the byte bound, and a card rendered twice in one version
// is still one render while it fits.
func TestFragmentCacheIsBoundedByBytes(t *testing.T) {
	f := NewFragments()
	f.maxBytes = 256 << 10
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := inbox.Card{ID: "cbig", Key: inbox.RequestKey{Source: "aep://h/a", Session: "s1", RequestID: "r1"}, Agent: "a",
		State: inbox.StatePending, ReceivedAt: now, Capture: aep.CaptureFull,
		Request: aep.Request{Kind: aep.KindInput, Prompt: strings.Repeat("a long line of a diff\n", 1000)}}
	opts := view.Options{Now: now}
	var one int
	for v := range uint64(100) {
		c.Version = v + 1
		html, err := f.Card(context.Background(), c, opts)
		require.NoError(t, err)
		one = len(html)
		f.mu.Lock()
		assert.LessOrEqual(t, f.bytes, f.maxBytes, "bytes kept after version %d", v+1)
		f.mu.Unlock()
	}
	assert.Greater(t, 100*one, f.maxBytes, "the versions rendered would not fit")

	f.mu.Lock()
	before := len(f.m)
	f.mu.Unlock()
	_, err := f.Card(context.Background(), c, opts)
	require.NoError(t, err)
	f.mu.Lock()
	assert.Equal(t, before, len(f.m), "the same version again is served from the cache")
	f.mu.Unlock()

	f.maxBytes = one - 1
	c.Version++
	_, err = f.Card(context.Background(), c, opts)
	require.NoError(t, err)
	f.mu.Lock()
	_, kept := f.m[fragmentKey{card: c.ID, version: c.Version, minute: now.Truncate(time.Minute).Unix()}]
	f.mu.Unlock()
	assert.False(t, kept, "a fragment larger than the bound alone is not kept")
}
