package app

import (
	"container/list"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most n connections open at a time. At the cap,
// a new connection takes the place of the one that has waited longest for
// its request: kept alive idle, or still sending its request's header or
// body (a slow client, or a crowd of them). Connections serving a request
// (a handler running, a push stream, a WebSocket) are never shed; when
// every slot serves one, the new connection waits until one closes. With
// the deadlines (header, body, response, idle) every held connection is
// let go in bounded time anyway; shedding makes a crowd of slow or idle
// clients unable to hold the slots of the ones that send a request at
// once, so /healthz and an operator's page are answered through any crowd.
// (golang.org/x/net/netutil.LimitListener only waits; this avoids the
// dependency and adds the shedding.)
type limitListener struct {
	net.Listener
	max    int
	onFull func() // called when a new connection has to wait for a slot
	onShed func() // called when a waiting connection is shed for a new one

	mu      sync.Mutex
	open    int
	waiting *list.List // of *limitConn waiting for a request, oldest first
	freed   chan struct{}
	done    chan struct{}
	close   sync.Once
}

// newLimitListener caps ln at n open connections; onFull and onShed (may
// be nil) are called when a new connection waits for a slot, and when it
// takes a waiting connection's.
func newLimitListener(ln net.Listener, n int, onFull, onShed func()) *limitListener {
	return &limitListener{Listener: ln, max: n, onFull: onFull, onShed: onShed, waiting: list.New(),
		freed: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for l.open >= l.max {
		if front := l.waiting.Front(); front != nil {
			victim := l.waiting.Remove(front).(*limitConn)
			victim.el = nil
			l.mu.Unlock()
			_ = victim.Close()
			if l.onShed != nil {
				l.onShed()
			}
			l.mu.Lock()
			continue
		}
		l.mu.Unlock()
		if l.onFull != nil {
			l.onFull()
		}
		select {
		case <-l.freed:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
		l.mu.Lock()
	}
	l.open++
	lc := &limitConn{Conn: c, l: l}
	lc.el = l.waiting.PushBack(lc) // a new connection waits for its first request
	l.mu.Unlock()
	return lc, nil
}

func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// waitingFor marks c as waiting for a request (sheddable), newest last.
func (l *limitListener) waitingFor(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	if c.el != nil {
		l.waiting.Remove(c.el)
	}
	c.el = l.waiting.PushBack(c)
}

// serving marks c as serving a request (not sheddable).
func (l *limitListener) serving(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.el != nil {
		l.waiting.Remove(c.el)
		c.el = nil
	}
}

// govern makes srv report its connections' states to l: idle or reading
// a request is waiting, a request whose body is in (or that has none) is
// serving, a hijacked connection (a WebSocket) is serving. srv.Handler,
// ConnState and ConnContext are wrapped or set.
func (l *limitListener) govern(srv *http.Server) {
	next := srv.Handler
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if lc := asLimitConn(c); lc != nil {
			return context.WithValue(ctx, limitConnKey{}, lc)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		lc := asLimitConn(c)
		if lc == nil {
			return
		}
		switch st {
		case http.StateIdle:
			l.waitingFor(lc)
		case http.StateHijacked:
			l.serving(lc)
		}
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(limitConnKey{}).(*limitConn); ok {
			if r.Body == nil || r.Body == http.NoBody {
				l.serving(lc)
			} else {
				r.Body = &bodyWatch{ReadCloser: r.Body, in: func() { l.serving(lc) }}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type limitConnKey struct{}

// asLimitConn finds the *limitConn under c (a TLS connection wraps it).
func asLimitConn(c net.Conn) *limitConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitConn)
	return lc
}

// bodyWatch calls in once its body has been read to the end.
type bodyWatch struct {
	io.ReadCloser
	once sync.Once
	in   func()
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.in)
	}
	return n, err
}

// limitConn gives its slot back when closed (once).
type limitConn struct {
	net.Conn
	l      *limitListener
	el     *list.Element // in l.waiting while waiting for a request; l.mu
	closed bool          // l.mu
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if !c.closed {
		c.closed = true
		if c.el != nil {
			l.waiting.Remove(c.el)
			c.el = nil
		}
		l.open--
		select {
		case l.freed <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
	return err
}

// capWarning logs that the connection cap (what, e.g. "UI") was reached,
// at most once a minute (a crowd at the cap must not flood the log).
func capWarning(logger *slog.Logger, what, flag string, n int) (onFull, onShed func()) {
	var mu sync.Mutex
	var lastFull, lastShed time.Time
	once := func(last *time.Time, msg string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			if now := time.Now(); now.Sub(*last) >= time.Minute {
				*last = now
				logger.Warn(msg, "max_conns", n)
			}
		}
	}
	return once(&lastFull, what+" connection cap reached, every connection serving a request: new connections wait for one to close (raise "+flag+" if this is real traffic)"),
		once(&lastShed, what+" connection cap reached: the connections that waited longest for their request (idle or slow) are closed to make room (raise "+flag+" if this is real traffic)")
}
