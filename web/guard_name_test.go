package web

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attack run rotated forged addresses to guess at 3 352/s. Wrong
// secrets for one operator name are now limited from every address
// together: past nameBurst, the name is refused whatever the address,
// while another name is not.
func TestWrongSecretsAreLimitedPerName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(behindProxy))
	try := func(i int, name, secret string) response {
		client := "203.0.113." + strconv.Itoa(i%250+1)
		return h.postForm(nil, "signin", url.Values{"token": {secret}, "name": {name}}, "X-Forwarded-For", client)
	}
	for i := range nameBurst {
		r := try(i, "ann", "not-the-secret")
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "wrong secret %d for ann from a fresh address: got %d", i+1, r.StatusCode)
	}
	over := try(nameBurst, "ANN", "not-the-secret")
	assert.Equal(t, http.StatusTooManyRequests, over.StatusCode, "a wrong secret past the name's burst, from a fresh address, in another case")
	assert.Equal(t, "30", over.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusTooManyRequests, try(nameBurst+1, "ann", secret).StatusCode, "the name is refused for the wait, the right secret too")
	assert.Equal(t, http.StatusSeeOther, try(nameBurst+2, "bob", secret).StatusCode, "another name signs in")
}

// With --trust-proxy, X-Forwarded-For is believed only from a peer the
// proxy may be (loopback and private by default, or --trusted-proxy): a
// client reaching the port directly from elsewhere is counted by its own
// address, whatever it forges.
func TestForwardedForIsBelievedOnlyFromTheProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, remote, xff string
		proxies           []string
		want              string
	}{
		{"public peer forging the header", "192.0.2.1:5555", "203.0.113.9", nil, "192.0.2.1"},
		{"loopback proxy", "127.0.0.1:5555", "203.0.113.9", nil, "203.0.113.9"},
		{"private proxy", "10.1.2.3:5555", "203.0.113.9", nil, "203.0.113.9"},
		{"named proxy", "198.51.100.10:5555", "203.0.113.9", []string{"198.51.100.0/24"}, "203.0.113.9"},
		{"not the named proxy", "10.1.2.3:5555", "203.0.113.9", []string{"198.51.100.0/24"}, "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{"X-Forwarded-For": {tc.xff}}}
			proxies, err := ParseTrustedProxies(tc.proxies)
			require.NoError(t, err)
			assert.Equal(t, tc.want, clientKey(r, true, proxies...))
		})
	}
	_, err := ParseTrustedProxies([]string{"not-an-address"})
	assert.Error(t, err)
}
