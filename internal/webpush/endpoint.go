package webpush

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrEndpoint is a push endpoint this UI will not post to.
var ErrEndpoint = errors.New("webpush: push endpoint refused")

// CheckEndpoint accepts only an https: URL whose host is a name or a
// public address: a subscription is the operator's input, and a push is
// a POST the server makes, so it must not reach into the server's own
// network. allowLoopback (tests only) also accepts http: on loopback.
// A name is checked again when dialled (dialControl), where it resolves.
func CheckEndpoint(raw string, allowLoopback bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return fmt.Errorf("%w: not a URL", ErrEndpoint)
	}
	host := u.Hostname()
	loopback := isLoopbackHost(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowLoopback && loopback:
	default:
		return fmt.Errorf("%w: only https: endpoints", ErrEndpoint)
	}
	if loopback && !allowLoopback {
		return fmt.Errorf("%w: a loopback host", ErrEndpoint)
	}
	if ip, err := netip.ParseAddr(host); err == nil && !loopback && !public(ip) {
		return fmt.Errorf("%w: a private address", ErrEndpoint)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// public reports whether ip is a globally routable unicast address.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// reserved are ranges IsPrivate does not cover that a push must not reach.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64: an IPv4 address (a private one, maybe) behind it
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"), // 6to4: the same
	netip.MustParsePrefix("2001:db8::/32"),
	// IPv6 forms that carry an IPv4 address, which may be loopback or
	// private: IPv4-compatible (::a.b.c.d, deprecated; :: and ::1 too),
	// IPv4-translated (::ffff:0:a.b.c.d), Teredo.
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("100::/64"), // discard-only
}

// Origin is an endpoint as it may be logged: scheme and host only. Its
// path is the push service's capability token for the device, a secret.
func Origin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	return u.Scheme + "://" + u.Host
}

// redactEndpoint is err's text with endpoint (and its path) replaced by
// its origin, for the log: a client error quotes the URL it failed on.
func redactEndpoint(err error, endpoint string) string {
	msg := strings.ReplaceAll(err.Error(), endpoint, Origin(endpoint))
	if u, perr := url.Parse(endpoint); perr == nil {
		for _, p := range []string{u.EscapedPath(), u.Path, u.RawQuery} {
			if len(p) > 1 {
				msg = strings.ReplaceAll(msg, p, "/…")
			}
		}
	}
	return msg
}

// dialControl refuses a connection to an address CheckEndpoint would
// refuse, after the name resolved (no DNS rebinding into the network).
func dialControl(allowLoopback bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrEndpoint, err)
		}
		ip := ap.Addr().Unmap()
		if allowLoopback && ip.IsLoopback() {
			return nil
		}
		if !public(ip) {
			return fmt.Errorf("%w: %s is not a public address", ErrEndpoint, ip)
		}
		return nil
	}
}

// newClient is the HTTP client pushes go out with: bounded, no proxy
// from the environment, no redirects, public addresses only.
func newClient(timeout time.Duration, allowLoopback bool) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: dialControl(allowLoopback)}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
			// A custom dialer turns HTTP/2 off unless asked for.
			ForceAttemptHTTP2:   true,
			TLSHandshakeTimeout: timeout,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
