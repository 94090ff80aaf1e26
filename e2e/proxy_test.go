package e2e

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// tcpGate is a TCP proxy in front of the relay whose connections a test
// can cut, so an agent drops off the relay without closing its sessions
// (as a crashed or partitioned agent would).
type tcpGate struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	shut  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startGate proxies a new loopback port to target (host:port) until the
// test ends.
func startGate(t *testing.T, target string) *tcpGate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := &tcpGate{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	g.wg.Go(g.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		g.cut()
		g.wg.Wait()
	})
	return g
}

// url is the gate's address as a relay base URL.
func (g *tcpGate) url() string { return "http://" + g.ln.Addr().String() }

func (g *tcpGate) accept() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.shut {
			g.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", g.target)
		if err != nil {
			g.mu.Unlock()
			_ = c.Close()
			continue
		}
		g.conns[c], g.conns[up] = struct{}{}, struct{}{}
		g.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		g.wg.Go(func() { pipe(up, c) })
		g.wg.Go(func() { pipe(c, up) })
	}
}

// cut closes every proxied connection and refuses new ones.
func (g *tcpGate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = true
	for c := range g.conns {
		_ = c.Close()
	}
	clear(g.conns)
}

// reopen lets connections through again.
func (g *tcpGate) reopen() {
	g.mu.Lock()
	g.shut = false
	g.mu.Unlock()
}

// rewritingProxy is an HTTP proxy in front of the relay (WebSocket
// upgrades pass through) that rewrites each SSE data line with edit, so
// the UI can be shown a request other than the one the agent asked.
func rewritingProxy(t *testing.T, relayURL string, edit func(data []byte) []byte) string {
	t.Helper()
	target, err := url.Parse(relayURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &lineEditor{src: bufio.NewReader(resp.Body), closer: resp.Body, edit: edit}
		}
		return nil
	}
	rp.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// lineEditor passes an event stream through line by line, editing the
// value of every data line.
type lineEditor struct {
	src    *bufio.Reader
	closer io.Closer
	edit   func([]byte) []byte
	out    []byte
}

func (l *lineEditor) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		line, err := l.src.ReadBytes('\n')
		if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.HasSuffix(v, []byte("\n")) {
			line = append(append([]byte("data: "), l.edit(bytes.TrimSuffix(v, []byte("\n")))...), '\n')
		}
		l.out = line
		if err != nil {
			if len(l.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

func (l *lineEditor) Close() error { return l.closer.Close() }
