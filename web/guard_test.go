package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// behindProxy trusts X-Forwarded-For, so a test can post from many client
// addresses over one loopback connection.
func behindProxy(c *Config) { c.TrustProxy = true }

// signInFrom posts the sign-in form with secret as a browser at client
// (behind the proxy) would.
func (h *harness) signInFrom(client, secret string) response {
	h.t.Helper()
	return h.postForm(nil, "signin", url.Values{"token": {secret}, "name": {"ann"}}, "X-Forwarded-For", "198.51.100.1, "+client)
}

// metricsFrom reads /metrics with a Bearer secret from client.
func (h *harness) metricsFrom(client, secret string) response {
	h.t.Helper()
	return h.do(nil, h.request(http.MethodGet, h.url("metrics"), nil, "Authorization", "Bearer "+secret, "X-Forwarded-For", client))
}

// failUntilRefused sends wrong secrets from client until one is refused
// with 429 (at most the burst), and returns its Retry-After in seconds.
func failUntilRefused(t *testing.T, try func() response) string {
	t.Helper()
	for range guessBurst + 1 {
		r := try()
		if r.StatusCode == http.StatusTooManyRequests {
			return r.Header.Get("Retry-After")
		}
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "a wrong secret under the limit: got %d, want 401", r.StatusCode)
	}
	t.Fatalf("no 429 after %d wrong secrets", guessBurst+1)
	return ""
}

// The attack run guessed 6 160 secrets a second. Five wrong secrets a
// minute are let through; the sixth is refused with 429 and Retry-After,
// and so is everything from that address for the wait, the right secret
// included. The right secret from another address still works. Each time
// the address goes over again, the wait doubles, up to 15 minutes.
func TestSixthWrongSecretInAMinuteIsRefused(t *testing.T) {
	t.Parallel()
	for name, try := range map[string]func(h *harness, client, secret string) response{
		"sign-in": (*harness).signInFrom,
		"bearer":  (*harness).metricsFrom,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, withToken(secret), withConfig(behindProxy))
			const guesser, operator = "203.0.113.7", "203.0.113.8"
			wrong := func() response { return try(h, guesser, "not-the-secret") }
			for i := 1; i <= 5; i++ {
				r := wrong()
				require.Equal(t, http.StatusUnauthorized, r.StatusCode, "wrong secret %d: got %d, want 401", i, r.StatusCode)
			}
			sixth := wrong()
			require.Equal(t, http.StatusTooManyRequests, sixth.StatusCode, "the 6th wrong secret in a minute: got %d, want 429", sixth.StatusCode)
			assert.Equal(t, "30", sixth.Header.Get("Retry-After"))
			assert.Contains(t, sixth.body, "Try again in 30 seconds")
			assert.Equal(t, int64(6), h.metrics.WrongSecrets.Load())
			assert.Equal(t, int64(1), h.metrics.GuessRefusals.Load())

			right := try(h, guesser, secret)
			assert.Equal(t, http.StatusTooManyRequests, right.StatusCode, "during the wait the address is refused, the right secret too")
			other := try(h, operator, secret)
			assert.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, other.StatusCode, "the right secret from another address: got %d", other.StatusCode)

			// Over again after each wait: the wait doubles, up to 15
			// minutes; after 15 quiet minutes it starts at 30 s again.
			h.clk.Add(29 * time.Second)
			assert.Equal(t, http.StatusTooManyRequests, wrong().StatusCode, "still refused at 29 s")
			h.clk.Add(time.Second)
			var waits []string
			for range 6 {
				got := failUntilRefused(t, wrong)
				waits = append(waits, got)
				secs, err := strconv.Atoi(got)
				require.NoError(t, err, "Retry-After %q", got)
				h.clk.Add(time.Duration(secs) * time.Second)
			}
			assert.Equal(t, []string{"60", "120", "240", "480", "900", "900"}, waits)
			h.clk.Add(guessForget)
			assert.Equal(t, "30", failUntilRefused(t, wrong), "after a quiet spell the wait starts again")
		})
	}
}

// The address counted: the peer, or behind a proxy the last
// X-Forwarded-For hop (the one the proxy added; earlier hops are the
// client's to forge); IPv6 by its /64.
func TestClientKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		remote  string
		xff     []string
		proxied bool
		want    string
	}{
		{"peer", "192.0.2.1:5555", nil, false, "192.0.2.1"},
		{"forwarded-for ignored without trust-proxy", "192.0.2.1:5555", []string{"203.0.113.9"}, false, "192.0.2.1"},
		{"last hop behind the proxy", "10.0.0.2:80", []string{"6.6.6.6, 203.0.113.9"}, true, "203.0.113.9"},
		{"last header line", "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.4"}, true, "198.51.100.4"},
		{"hop with a port", "10.0.0.2:80", []string{"203.0.113.9:4711"}, true, "203.0.113.9"},
		{"bracketed IPv6 hop", "10.0.0.2:80", []string{"[2001:db8:1:2::7]:4711"}, true, "2001:db8:1:2::/64"},
		{"unreadable hop: the peer", "10.0.0.2:80", []string{"unknown"}, true, "10.0.0.2"},
		{"no header: the peer", "10.0.0.2:80", nil, true, "10.0.0.2"},
		{"IPv6 peer by its /64", "[2001:db8:1:2:aaaa::1]:5555", nil, false, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6 peer", "[::ffff:192.0.2.1]:5555", nil, false, "192.0.2.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			assert.Equal(t, tc.want, clientKey(r, tc.proxied))
		})
	}
}

// Two addresses in one IPv6 /64 share a count; the next /64 has its own.
func TestGuessingLimitCountsIPv6Per64(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(behindProxy))
	for i := range guessBurst {
		require.Equal(t, http.StatusUnauthorized, h.signInFrom("2001:db8:1:2::"+strconv.Itoa(i+1), "wrong").StatusCode)
	}
	assert.Equal(t, http.StatusTooManyRequests, h.signInFrom("2001:db8:1:2:ffff::1", "wrong").StatusCode, "same /64")
	assert.Equal(t, http.StatusSeeOther, h.signInFrom("2001:db8:1:3::1", secret).StatusCode, "another /64")
}

// The table of addresses is bounded: the least recently seen is forgotten
// first.
func TestGuessingTableForgetsTheLeastRecentlySeen(t *testing.T) {
	t.Parallel()
	clk := &clock{t: testNow}
	g := newGuard(Config{Now: clk.Now, Logger: discardLogger()}, &Metrics{})
	g.max = 3
	for range guessBurst + 1 {
		g.failed("bearer", "a")
	}
	require.Positive(t, g.refused("a"))
	g.failed("bearer", "b")
	g.failed("bearer", "c")
	assert.Positive(t, g.refused("a"), "a was seen last: kept")
	g.failed("bearer", "d") // the table is full: b, seen least recently, goes
	assert.Equal(t, 3, g.lru.Len())
	assert.NotContains(t, g.entries, "b")
	assert.Positive(t, g.refused("a"))
}

// logRecorder keeps the messages and attributes logged.
type logRecorder struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message, "level": r.Level}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, m)
	return nil
}

func (l *logRecorder) all() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]any(nil), l.recs...)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The attack run's 5 003 WARN lines in 0.8 s: wrong secrets are logged at
// most once per address a minute, with how many there were; Bearer ones
// too.
func TestWrongSecretsAreLoggedOncePerAddressAMinute(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	h := newHarness(t, withToken(secret), withConfig(behindProxy), withConfig(func(c *Config) { c.Logger = slog.New(rec) }))
	for range 4 {
		h.signInFrom("203.0.113.7", "wrong")
	}
	h.metricsFrom("203.0.113.7", "wrong")
	h.signInFrom("203.0.113.8", "wrong")
	h.clk.Add(time.Minute)
	h.metricsFrom("203.0.113.7", "wrong")

	var lines []string
	for _, r := range rec.all() {
		if r["msg"] == "web: wrong operator secret" {
			lines = append(lines, fmt.Sprintf("%v %v %v", r["client"], r["via"], r["failures"]))
		}
	}
	assert.Equal(t, []string{"203.0.113.7 sign-in 1", "203.0.113.8 sign-in 1", "203.0.113.7 bearer 5"}, lines)
}
