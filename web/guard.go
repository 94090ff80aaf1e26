package web

import (
	"container/list"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Guessing limits: wrong operator secrets (sign-in form and Bearer) are
// limited per client address, and per operator name as well, so guesses
// from many addresses (or forged ones) at one name are limited too.
const (
	// nameBurst wrong secrets for one operator name are let through at
	// once, from any addresses, refilled at nameRate: 10 a minute. Looser
	// than an address's, since every guesser shares it, and while it is
	// refused the name's own operator is refused too (with the same wait).
	nameBurst = 20
	nameRate  = rate.Limit(10.0 / 60)
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
	proxied bool           // Config.TrustProxy
	proxies []netip.Prefix // Config.TrustedProxies
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
	return &guard{now: cfg.Now, log: cfg.Logger, proxied: cfg.TrustProxy, proxies: cfg.TrustedProxies, m: m, max: guessTable, entries: map[string]*list.Element{}, lru: list.New()}
}

// key is the address r's wrong secrets count under (clientKey).
func (g *guard) key(r *http.Request) string { return clientKey(r, g.proxied, g.proxies...) }

// nameKey is the key an operator name's wrong secrets count under
// (case folded; never an address's).
func nameKey(name string) string { return namePrefix + strings.ToLower(name) }

const namePrefix = "name:"

// refused returns how long the longest refused of keys (an address, a
// name) is still refused (0: none is); a refusal is counted once.
func (g *guard) refused(keys ...string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var left time.Duration
	for _, key := range keys {
		el, ok := g.entries[key]
		if !ok {
			continue
		}
		g.lru.MoveToFront(el)
		left = max(left, el.Value.(*guessEntry).until.Sub(g.now()))
	}
	if left > 0 {
		g.m.GuessRefusals.Add(1)
		return left
	}
	return 0
}

// failed records a wrong secret under each of keys (the address, and the
// name when one was given; via: "sign-in" or "bearer") and returns how
// long the request's sender is now refused (0: not yet), the longest.
func (g *guard) failed(via string, keys ...string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.m.WrongSecrets.Add(1)
	var longest time.Duration
	for _, key := range keys {
		e := g.entry(key)
		if now.Sub(e.lastFail) >= guessForget && now.Sub(e.until) >= guessForget {
			e.wait = 0 // quiet long enough: the doubling starts again
		}
		e.lastFail = now
		e.unlogged++
		var wait time.Duration
		if !e.lim.AllowN(now, 1) {
			wait = min(max(2*e.wait, firstWait), maxWait)
			e.wait, e.until = wait, now.Add(wait)
		}
		longest = max(longest, wait)
		// An address's failures are logged once a minute; a name's only
		// when it starts being refused (the address line says the rest).
		_, isName := strings.CutPrefix(key, namePrefix)
		if now.Sub(e.logged) >= guessLogEvery && (!isName || wait > 0) {
			attrs := []any{"client", key, "via", via, "failures", e.unlogged}
			if name, ok := strings.CutPrefix(key, namePrefix); ok {
				attrs[0], attrs[1] = "operator", name
			}
			if wait > 0 {
				attrs = append(attrs, "refused_for", wait)
			}
			g.log.Warn("web: wrong operator secret", attrs...)
			e.logged, e.unlogged = now, 0
		}
	}
	if longest > 0 {
		g.m.GuessRefusals.Add(1)
	}
	return longest
}

// succeeded forgets keys: the right secret ends their count.
func (g *guard) succeeded(keys ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, key := range keys {
		if el, ok := g.entries[key]; ok {
			g.lru.Remove(el)
			delete(g.entries, key)
		}
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
	if strings.HasPrefix(key, namePrefix) {
		e.lim = rate.NewLimiter(nameRate, nameBurst)
	}
	g.entries[key] = g.lru.PushFront(e)
	return e
}

// retryAfter is a wait as a Retry-After value: whole seconds, rounded up.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// DefaultTrustedProxies are the peers whose X-Forwarded-For is believed
// with --trust-proxy when no --trusted-proxy is given: loopback and the
// private ranges, where a reverse proxy in front of the UI sits.
var DefaultTrustedProxies = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fc00::/7"),
}

// ParseTrustedProxies reads --trusted-proxy values: addresses (one host)
// or CIDR prefixes.
func ParseTrustedProxies(vs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vs {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("%q: want an address or a prefix like 10.0.0.0/8", v)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// clientKey is the address the guessing limits count a request under:
// with trustProxy and a peer in proxies (DefaultTrustedProxies when none
// are given), the last X-Forwarded-For hop (the one the proxy added:
// earlier hops are the client's to forge), else the connection's peer. A
// client that reaches the port directly, not through the proxy, is
// counted by its own address whatever header it forges. An IPv6 address
// is keyed by its /64.
func clientKey(r *http.Request, trustProxy bool, proxies ...netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, peerOK := parseHop(host)
	if len(proxies) == 0 {
		proxies = DefaultTrustedProxies
	}
	addr, ok := netip.Addr{}, false
	if trustProxy && peerOK && slices.ContainsFunc(proxies, func(p netip.Prefix) bool { return p.Contains(peer) }) {
		addr, ok = lastForwardedHop(r.Header.Values("X-Forwarded-For"))
	}
	if !ok {
		if !peerOK {
			return r.RemoteAddr
		}
		addr = peer
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
