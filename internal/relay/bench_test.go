package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/relay"
)

// benchEvent is a typical small event (about 330 bytes) with id n.
func benchEvent(session string, n int) []byte {
	return fmt.Appendf(nil, `{"aep":"0.1","id":"bench-%d","type":"tool.completed","time":"2026-07-03T10:00:00Z","source":"aep://bench/agent/bench/session/%s","agent":"bench","session":"%s","seq":%d,"cause":"bench-%d","data":{"tool":{"name":"read_file"},"status":"success","duration_ms":12}}`,
		n, session, session, n, n-1)
}

func benchRelay(b *testing.B, c relay.Config) (*relay.Relay, *httptest.Server) {
	b.Helper()
	return serveBench(b, relay.New(c))
}

// benchJetStream is benchRelay on JetStream: a relay on a stream of its
// own (3 replicas) on the package's in-process three-node NATS cluster.
func benchJetStream(b *testing.B, c relay.Config) (*relay.Relay, *httptest.Server) {
	b.Helper()
	k := streams.Add(1)
	c.NATS = relay.NATSConfig{URLs: cluster(b).URLs(), Stream: fmt.Sprintf("B%d", k), Subject: fmt.Sprintf("b%d", k)}
	return serveBench(b, openOn(b, c))
}

func serveBench(b *testing.B, r *relay.Relay) (*relay.Relay, *httptest.Server) {
	b.Helper()
	srv := httptest.NewServer(r.Handler())
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
		srv.Close()
	})
	return r, srv
}

// BenchmarkIngestNDJSON posts NDJSON batches of 1000 events and reports
// events/s (wall clock) and events per CPU-second: over loopback (client,
// HTTP and relay in this process), straight into the handler (the
// relay's own cost), and over loopback to a relay on JetStream (a
// three-node NATS cluster in this process too, the stream on 3
// replicas: each POST answered once its events are stored and applied).
// Building each next batch is outside the timing.
func BenchmarkIngestNDJSON(b *testing.B) {
	const perBatch = 1000
	body := func(round int) []byte {
		var buf bytes.Buffer
		for i := range perBatch {
			buf.Write(benchEvent("ingest-"+strconv.Itoa(round%8), round*perBatch+i))
			buf.WriteByte('\n')
		}
		return buf.Bytes()
	}
	run := func(b *testing.B, post func([]byte) int) {
		round := 0
		next := body(round)
		b.SetBytes(int64(len(next)))
		var cpu time.Duration
		b.ResetTimer()
		for b.Loop() {
			c0 := cpuTime()
			if status := post(next); status != http.StatusAccepted {
				b.Fatalf("POST: %d", status)
			}
			cpu += cpuTime() - c0
			b.StopTimer()
			round++
			next = body(round)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.N*perBatch)/b.Elapsed().Seconds(), "events/s")
		if cpu > 0 {
			// Events per second of CPU the whole process used while posting
			// (client, HTTP and relay): the figure a shared machine's load
			// does not move much.
			b.ReportMetric(float64(b.N*perBatch)/cpu.Seconds(), "events/cpu-s")
		}
	}
	loopback := func(b *testing.B, open func(*testing.B, relay.Config) (*relay.Relay, *httptest.Server)) {
		c := relay.DefaultConfig()
		c.Token = testToken
		_, srv := open(b, c)
		client := srv.Client()
		run(b, func(body []byte) int {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/events", bytes.NewReader(body))
			req.Header = emitHeaders("application/x-ndjson")
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		})
	}
	b.Run("loopback", func(b *testing.B) { loopback(b, benchRelay) })
	b.Run("jetstream-loopback", func(b *testing.B) { loopback(b, benchJetStream) })
	b.Run("handler", func(b *testing.B) {
		c := relay.DefaultConfig()
		c.Token = testToken
		r := relay.New(c)
		h := r.Handler()
		run(b, func(body []byte) int {
			req := httptest.NewRequest(http.MethodPost, "/events", bytes.NewReader(body))
			req.Header = emitHeaders("application/x-ndjson")
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		})
	})
}

// echoFloor is the floor for fan-out latency: a bare net/http SSE echo
// that hands each POST body to every open stream, nothing more.
type echoFloor struct {
	mu   sync.Mutex
	subs map[chan []byte]struct{}
}

func (e *echoFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		msg := fmt.Appendf(nil, "id: fan:0:%s\nevent: tool.completed\ndata: %s\n\n", r.Header.Get("X-Seq"), body)
		e.mu.Lock()
		for c := range e.subs {
			select {
			case c <- msg:
			default:
			}
		}
		e.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	c := make(chan []byte, 64)
	e.mu.Lock()
	e.subs[c] = struct{}{}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.subs, c)
		e.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-c:
			if _, err := w.Write(m); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// receipt is one delivery seen by a reader.
type receipt struct {
	seq int
	at  time.Time
}

// openReaders opens n SSE streams on url (readers are goroutines in this
// process) and reports every "id: fan:0:K" they see on got.
func openReaders(b *testing.B, url string, n int, got chan<- receipt) func() {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("open reader: %v %v", err, resp)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 4096), 1<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if rest, ok := bytes.CutPrefix(line, []byte("id: fan:0:")); ok {
					k, _ := strconv.Atoi(string(rest))
					got <- receipt{seq: k, at: time.Now()}
				}
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		tr.CloseIdleConnections()
	}
}

// fanTarget is one server under the fan-out benchmark with its readers.
type fanTarget struct {
	post func(k int, body []byte) error
	got  chan receipt
	stop func()
	lat  []time.Duration
}

func postWith(client *http.Client, url string, h http.Header) func(int, []byte) error {
	return func(k int, body []byte) error {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		for key, v := range h {
			req.Header[key] = v
		}
		req.Header.Set("X-Seq", strconv.Itoa(k))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
}

// send posts event k and waits until all n readers have it.
func (f *fanTarget) send(b *testing.B, k, n int) {
	body := benchEvent("fan", k)
	start := time.Now()
	if err := f.post(k, body); err != nil {
		b.Fatal(err)
	}
	for range n {
		select {
		case r := <-f.got:
			if r.seq != k {
				b.Fatalf("reader saw %d, want %d", r.seq, k)
			}
			f.lat = append(f.lat, r.at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatalf("event %d not delivered to all %d readers", k, n)
		}
	}
}

func percentile(lat []time.Duration, p float64) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))].Microseconds())
}

// BenchmarkFanoutLatency measures POST-to-delivery latency over SSE with
// 1, 100 and 1000 subscribers: the relay in memory, the relay on
// JetStream (three in-process NATS nodes, 3 replicas: the event goes to
// the stream and back before the fan-out) and a bare net/http SSE echo
// (the floor) run side by side and take turns, one event each per
// iteration, so all see the same machine load. Every POST waits until all readers
// (goroutines in this process, over loopback) have the previous event.
// Samples = iterations x subscribers, per target. With -short (make
// bench-smoke) the largest size is 100.
func BenchmarkFanoutLatency(b *testing.B) {
	sizes := []int{1, 100, 1000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			c := relay.DefaultConfig()
			c.Token = testToken
			_, rsrv := benchRelay(b, c)
			fsrv := httptest.NewServer(&echoFloor{subs: map[chan []byte]struct{}{}})
			b.Cleanup(fsrv.Close)
			rel := &fanTarget{got: make(chan receipt, n*4), post: postWith(rsrv.Client(), rsrv.URL+"/events",
				http.Header{"Content-Type": {"application/json"}, "Aep-Version": {"0.1"}, "Authorization": {"Bearer " + testToken}})}
			_, jsrv := benchJetStream(b, c)
			jst := &fanTarget{got: make(chan receipt, n*4), post: postWith(jsrv.Client(), jsrv.URL+"/events",
				http.Header{"Content-Type": {"application/json"}, "Aep-Version": {"0.1"}, "Authorization": {"Bearer " + testToken}})}
			flo := &fanTarget{got: make(chan receipt, n*4), post: postWith(fsrv.Client(), fsrv.URL+"/events", nil)}
			rel.stop = openReaders(b, rsrv.URL+"/stream", n, rel.got)
			defer rel.stop()
			jst.stop = openReaders(b, jsrv.URL+"/stream", n, jst.got)
			defer jst.stop()
			flo.stop = openReaders(b, fsrv.URL+"/stream", n, flo.got)
			defer flo.stop()
			k := 0
			b.ResetTimer()
			for b.Loop() {
				rel.send(b, k, n)
				jst.send(b, k, n)
				flo.send(b, k, n)
				k++
			}
			b.StopTimer()
			b.ReportMetric(percentile(rel.lat, 0.50), "relay-p50-µs")
			b.ReportMetric(percentile(rel.lat, 0.99), "relay-p99-µs")
			b.ReportMetric(percentile(jst.lat, 0.50), "jetstream-p50-µs")
			b.ReportMetric(percentile(jst.lat, 0.99), "jetstream-p99-µs")
			b.ReportMetric(percentile(flo.lat, 0.50), "floor-p50-µs")
			b.ReportMetric(percentile(flo.lat, 0.99), "floor-p99-µs")
			b.ReportMetric(percentile(rel.lat, 0.99)/percentile(flo.lat, 0.99), "p99-ratio")
			b.ReportMetric(float64(len(rel.lat)), "samples")
		})
	}
}

// BenchmarkIdleSubscriberMemory opens idle subscribers (SSE streams, and
// WebSocket connections with one subscription each) from raw sockets that
// hold no goroutine or buffer of their own, and reports the heap plus
// goroutine stack growth per subscriber. The client sockets' own small
// heap cost (file descriptor, poller entry) is included. With -short
// (make bench-smoke) it opens 50 of each, not 500.
func BenchmarkIdleSubscriberMemory(b *testing.B) {
	n := 500
	if testing.Short() {
		n = 50
	}
	for _, kind := range []string{"sse", "ws"} {
		b.Run(kind, func(b *testing.B) {
			var heap, stack float64
			for b.Loop() {
				heap, stack = idleMemory(b, kind, n)
			}
			b.ReportMetric(heap+stack, "B/subscriber")
			b.ReportMetric(heap, "heap-B/subscriber")
			b.ReportMetric(stack, "stack-B/subscriber")
		})
	}
}

func idleMemory(b *testing.B, kind string, n int) (heap, stack float64) {
	c := relay.DefaultConfig()
	c.Token = testToken
	r, srv := benchRelay(b, c)
	addr := srv.Listener.Addr().String()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	heap0, stack0 := memNow()
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		if kind == "sse" {
			fmt.Fprintf(conn, "GET /stream?access_token=%s HTTP/1.1\r\nHost: relay\r\n\r\n", testToken)
			readUntil(b, conn, "\r\n\r\n")
			continue
		}
		key := make([]byte, 16)
		_, _ = rand.Read(key)
		fmt.Fprintf(conn, "GET /socket?access_token=%s HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n",
			testToken, base64.StdEncoding.EncodeToString(key))
		readUntil(b, conn, "\r\n\r\n")
		writeMasked(b, conn, `{"type":"hello","versions":["0.1"],"role":"consumer"}`)
		readUntil(b, conn, `"type":"hello"`)
		writeMasked(b, conn, `{"type":"subscribe","id":"s","filter":{}}`)
		readUntil(b, conn, `"subscribed"`)
	}
	if got := r.Stats().Subscribers; got != n {
		b.Fatalf("subscribers: got %d, want %d", got, n)
	}
	heap1, stack1 := memNow()
	return (float64(heap1) - float64(heap0)) / float64(n), (float64(stack1) - float64(stack0)) / float64(n)
}

// memNow is heap in use and goroutine stacks in use, after a collection.
func memNow() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

// readUntil reads byte by byte (no buffer left behind) until s was seen.
func readUntil(b *testing.B, conn net.Conn, s string) {
	b.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var seen []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(seen), s) {
		if _, err := conn.Read(one); err != nil {
			b.Fatalf("read until %q: %v (got %q)", s, err, seen)
		}
		seen = append(seen, one[0])
	}
}

// writeMasked writes one masked client text frame (payload < 126 bytes).
func writeMasked(b *testing.B, conn net.Conn, payload string) {
	b.Helper()
	mask := []byte{1, 2, 3, 4}
	f := []byte{0x81, 0x80 | byte(len(payload))}
	f = append(f, mask...)
	for i := range len(payload) {
		f = append(f, payload[i]^mask[i%4])
	}
	if _, err := conn.Write(f); err != nil {
		b.Fatal(err)
	}
}
