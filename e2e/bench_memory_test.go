package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"testing"
	"time"
)

// BenchmarkBrowserMemory measures what one idle connected browser costs
// the server: each iteration opens one more push stream (GET /push, read
// up to its first `status` event, then left idle with no client
// goroutine), and the live heap (after GC) and goroutine stacks are
// compared before and after all b.N are open. The client side of each
// connection is a bare net.Conn in the same process, so the figures
// include one client socket per browser; the baselines, measured in the
// same run, show what that and net/http itself cost:
//
//   - tcp-pair: a bare TCP connection pair (client and accepted server
//     socket, no goroutine, no HTTP);
//   - nethttp-stream: a net/http handler that answers an event stream,
//     writes one event and waits for the client to leave (what any Go
//     SSE endpoint costs at the least).
//
// Metrics per connection: heap-B, stack-B, total-B (heap + stacks, the
// figure held to the 64 KiB target) and goroutines. Kernel socket
// buffers are not Go memory and not counted.
func BenchmarkBrowserMemory(b *testing.B) {
	b.Run("ui-push", func(b *testing.B) {
		s := benchStartStack(b, benchStackOptions{})
		u, err := url.Parse(s.uiURL)
		if err != nil {
			b.Fatal(err)
		}
		benchHeldConns(b, u.Host, "/push")
	})
	b.Run("nethttp-stream", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv := &http.Server{
			Handler:           http.HandlerFunc(benchMinimalStream),
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		b.Cleanup(func() {
			cancel()
			_ = srv.Close()
			<-served
		})
		benchHeldConns(b, ln.Addr().String(), "/push")
	})
	b.Run("tcp-pair", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		accepted := make(chan net.Conn, 64)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		b.Cleanup(func() {
			_ = ln.Close()
			<-done
		})
		benchMeasureHeld(b, func() (io.Closer, error) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return nil, err
			}
			select {
			case sc := <-accepted:
				return benchPair{c, sc}, nil
			case <-time.After(benchWait):
				c.Close()
				return nil, fmt.Errorf("no accept within %v", benchWait)
			}
		})
	})
}

// benchPair is both ends of a connection, closed together.
type benchPair [2]net.Conn

func (p benchPair) Close() error {
	_ = p[1].Close()
	return p[0].Close()
}

// benchMinimalStream is the least an SSE endpoint does: headers, one
// event, flush, then wait for the client (or the server) to end.
func benchMinimalStream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "event: status\ndata: ok\n\n")
	_ = http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

// benchHeldConns measures b.N idle event streams to addr+path.
func benchHeldConns(b *testing.B, addr, path string) {
	b.Helper()
	benchMeasureHeld(b, func() (io.Closer, error) { return benchOpenIdleStream(addr, path) })
}

// benchHeldMax bounds how many connections benchMeasureHeld holds at
// once (each costs this process file descriptors): at the default
// benchtime b.N grows with the speed of a connect, past any descriptor
// limit.
const benchHeldMax = 1000

// benchMeasureHeld opens b.N connections with open, keeps them all, and
// reports the heap and stack growth per connection. Past benchHeldMax
// the figures are those of the first benchHeldMax connections; the rest
// are opened in batches of benchHeldMax, each closed (outside the timer)
// before the next, so only the time per connect depends on them.
func benchMeasureHeld(b *testing.B, open func() (io.Closer, error)) {
	b.Helper()
	var conns []io.Closer
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
		conns = conns[:0]
	}
	b.Cleanup(closeAll)
	before := benchMemNow()
	var after benchMem
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%benchHeldMax == 0 {
			b.StopTimer()
			if i == benchHeldMax {
				after = benchMemNow()
			}
			closeAll()
			b.StartTimer()
		}
		c, err := open()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	b.StopTimer()
	if b.N <= benchHeldMax {
		after = benchMemNow()
	}
	n := float64(min(b.N, benchHeldMax))
	heap := (float64(after.heap) - float64(before.heap)) / n
	stack := (float64(after.stack) - float64(before.stack)) / n
	b.ReportMetric(heap, "heap-B/conn")
	b.ReportMetric(stack, "stack-B/conn")
	b.ReportMetric(heap+stack, "total-B/conn")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/n, "goroutines/conn")
}

// benchMem is the process's live heap, goroutine stack memory and
// goroutine count, read after two GCs.
type benchMem struct {
	heap, stack uint64
	goroutines  int
}

func benchMemNow() benchMem {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return benchMem{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

// benchOpenIdleStream connects to addr, asks for path as an EventSource
// does and returns once the first `status` event has arrived (the UI has
// subscribed the browser). No goroutine reads the connection after that:
// the client holds only the socket.
func benchOpenIdleStream(addr, path string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, benchWait)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(benchWait))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte("event: status\n")); i >= 0 && bytes.Contains(got[i:], []byte("\n\n")) {
			break
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s%s: %w after %q", addr, path, err, got)
		}
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 200 ")) {
		c.Close()
		return nil, fmt.Errorf("%s%s answered %q", addr, path, got)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}
