package app

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// limitListener holds at most n connections open at a time: at the cap,
// Accept waits for one to close before it takes the next from the
// kernel's queue (as golang.org/x/net/netutil.LimitListener does, which
// this avoids a dependency for). With the UI's deadlines (header, body,
// response, idle) every held connection is let go in bounded time, so the
// cap keeps a crowd of slow clients from taking every file descriptor
// the process has while the ones already in are served.
type limitListener struct {
	net.Listener
	sem    chan struct{}
	done   chan struct{}
	close  sync.Once
	onFull func() // called when Accept has to wait for a slot
}

// newLimitListener caps ln at n open connections; onFull (may be nil) is
// called each time a new connection has to wait for a slot.
func newLimitListener(ln net.Listener, n int, onFull func()) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{}), onFull: onFull}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		if l.onFull != nil {
			l.onFull()
		}
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed (once).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// capWarning logs that the connection cap was reached, at most once a
// minute (a crowd at the cap must not flood the log).
func capWarning(logger *slog.Logger, n int) func() {
	var mu sync.Mutex
	var last time.Time
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= time.Minute {
			last = now
			logger.Warn("connection cap reached: new connections wait for one to close (raise --max-conns if this is real traffic)", "max_conns", n)
		}
	}
}
