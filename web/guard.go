package web

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Guessing limits: wrong operator secrets (sign-in form and Bearer) are
// limited per client address.
const (
	// guessBurst wrong secrets are let through at once, refilled at
	// guessRate: 5 a minute.
	guessBurst = 5
	guessRate  = rate.Limit(float64(guessBurst) / 60)
	// firstWait is how long an address is refused after going over the
	// rate; each later time over it doubles, up to maxWait.
	firstWait = 30 * time.Second
	maxWait   = 15 * time.Minute
	// guessForget is how long an address must stay quiet (no wrong
	// secret, its last wait over) for its next wait to start again at
	// firstWait.
	guessForget = maxWait
	// guessLogEvery is how often at most one address's wrong secrets are
	// logged (with their count).
	guessLogEvery = time.Minute
	// guessTable bounds the addresses remembered; the least recently
	// seen is forgotten first.
	guessTable = 10000
)

// guard counts wrong secrets per client address (an IPv4 address, or an
// IPv6 /64, what one subscriber usually has) in a bounded table. Over the
// rate, the address is refused for a wait, whatever it presents: the
// right secret from another address still works. Time is Config.Now.
type guard struct {
	mu      sync.Mutex
	now     func() time.Time
	log     *slog.Logger
	proxied bool // Config.TrustProxy
	m       *Metrics
	max     int
	entries map[string]*list.Element // of *guessEntry
	lru     *list.List               // front: most recently seen
}

// guessEntry is one address's record.
type guessEntry struct {
	key      string
	lim      *rate.Limiter
	until    time.Time     // refused until then
	wait     time.Duration // the last wait given (0: none yet)
	lastFail time.Time
	logged   time.Time // when its failures were last logged
	unlogged int       // failures since
}

func newGuard(cfg Config, m *Metrics) *guard {
	return &guard{now: cfg.Now, log: cfg.Logger, proxied: cfg.TrustProxy, m: m, max: guessTable, entries: map[string]*list.Element{}, lru: list.New()}
}

// key is the address r's wrong secrets count under (clientKey).
func (g *guard) key(r *http.Request) string { return clientKey(r, g.proxied) }

// refused returns how long the address is still refused (0: not); a
// refusal is counted.
func (g *guard) refused(key string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	el, ok := g.entries[key]
	if !ok {
		return 0
	}
	g.lru.MoveToFront(el)
	if left := el.Value.(*guessEntry).until.Sub(g.now()); left > 0 {
		g.m.GuessRefusals.Add(1)
		return left
	}
	return 0
}

// failed records a wrong secret from the address (via: "sign-in" or
// "bearer") and returns how long it is now refused (0: not yet).
func (g *guard) failed(key, via string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	e := g.entry(key)
	if now.Sub(e.lastFail) >= guessForget && now.Sub(e.until) >= guessForget {
		e.wait = 0 // quiet long enough: the doubling starts again
	}
	e.lastFail = now
	e.unlogged++
	g.m.WrongSecrets.Add(1)
	var wait time.Duration
	if !e.lim.AllowN(now, 1) {
		wait = min(max(2*e.wait, firstWait), maxWait)
		e.wait, e.until = wait, now.Add(wait)
		g.m.GuessRefusals.Add(1)
	}
	if now.Sub(e.logged) >= guessLogEvery {
		attrs := []any{"client", key, "via", via, "failures", e.unlogged}
		if wait > 0 {
			attrs = append(attrs, "refused_for", wait)
		}
		g.log.Warn("web: wrong operator secret", attrs...)
		e.logged, e.unlogged = now, 0
	}
	return wait
}

// succeeded forgets the address: the right secret ends its count.
func (g *guard) succeeded(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if el, ok := g.entries[key]; ok {
		g.lru.Remove(el)
		delete(g.entries, key)
	}
}

// entry finds or makes the address's record, forgetting the least
// recently seen when the table is full. g.mu is held.
func (g *guard) entry(key string) *guessEntry {
	if el, ok := g.entries[key]; ok {
		g.lru.MoveToFront(el)
		return el.Value.(*guessEntry)
	}
	for g.lru.Len() >= g.max {
		old := g.lru.Back()
		g.lru.Remove(old)
		delete(g.entries, old.Value.(*guessEntry).key)
	}
	e := &guessEntry{key: key, lim: rate.NewLimiter(guessRate, guessBurst)}
	g.entries[key] = g.lru.PushFront(e)
	return e
}

// retryAfter is a wait as a Retry-After value: whole seconds, rounded up.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// clientKey is the address the guessing limits count a request under:
// with trustProxy, the last X-Forwarded-For hop (the one the proxy added:
// earlier hops are the client's to forge), else the connection's peer;
// an IPv6 address is keyed by its /64.
func clientKey(r *http.Request, trustProxy bool) string {
	addr, ok := netip.Addr{}, false
	if trustProxy {
		addr, ok = lastForwardedHop(r.Header.Values("X-Forwarded-For"))
	}
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if addr, ok = parseHop(host); !ok {
			return r.RemoteAddr
		}
	}
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// lastForwardedHop is the last address of X-Forwarded-For (several header
// lines read as one list).
func lastForwardedHop(values []string) (netip.Addr, bool) {
	if len(values) == 0 {
		return netip.Addr{}, false
	}
	hops := strings.Split(values[len(values)-1], ",")
	return parseHop(strings.TrimSpace(hops[len(hops)-1]))
}

// parseHop reads an address as proxies write it: bare, bracketed IPv6,
// or with a port.
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// waitWords says a wait as an operator reads it: "30 seconds", "2 minutes".
func waitWords(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	switch {
	case secs == 1:
		return "1 second"
	case secs < 120:
		return strconv.FormatInt(secs, 10) + " seconds"
	}
	return strconv.FormatInt((secs+59)/60, 10) + " minutes"
}
