package web

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attack run subscribed 3000 devices for one operator. At most
// MaxPushDevices are kept per operator: a new one replaces that
// operator's oldest, and another operator's devices are left alone.
func TestPushDevicesPerOperatorAreCapped(t *testing.T) {
	t.Parallel()
	const most = 3
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j), withConfig(func(c *Config) { c.MaxPushDevices = most }))
	alice, bob := h.client(), h.client()
	h.signIn(alice, "alice")
	h.signIn(bob, "bob")
	bobs := "https://push.example/bob"
	r := h.sendJSON(bob, http.MethodPost, "subscriptions", subscription(t, bobs))
	require.Equal(t, http.StatusCreated, r.StatusCode, r.body)

	for i := range most + 2 {
		h.clk.Add(time.Second) // each newer than the last
		r := h.sendJSON(alice, http.MethodPost, "subscriptions", subscription(t, "https://push.example/alice-"+strconv.Itoa(i)))
		require.Equal(t, http.StatusCreated, r.StatusCode, r.body)
	}
	want := map[string]string{bobs: "bob"}
	for i := 2; i < most+2; i++ {
		want["https://push.example/alice-"+strconv.Itoa(i)] = "alice"
	}
	assert.Equal(t, want, endpoints(t, j), "alice keeps her %d newest devices, bob his own", most)
}
