package inbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefreshRepublishesOpenCardsOnly(t *testing.T) {
	t.Parallel()
	in := New(Options{})
	in.Apply(raw(t, `{"aep":"0.1","id":"r1","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s1","seq":0,"data":{"kind":"input","prompt":"Name?"}}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"r2","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s2","seq":0,"data":{"kind":"input","prompt":"Age?"}}`))
	in.Apply(raw(t, `{"aep":"0.1","id":"t2","type":"attention.timeout","subject":"r2","time":"2026-07-03T10:01:00Z","source":"aep://h/a","agent":"a","session":"s2","seq":1,"data":{}}`))
	sub := in.Subscribe(8)
	defer sub.Close()

	in.Refresh()

	require.Len(t, sub.C(), 1, "one change: only the open card is republished")
	ch := <-sub.C()
	assert.Equal(t, ChangeUpdated, ch.Kind)
	c, ok := in.Card(ch.Card)
	require.True(t, ok)
	assert.Equal(t, "s1", c.Session, "got the settled card, want the open one")
}
