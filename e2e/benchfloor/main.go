// Command benchfloor is BenchmarkPushFleet's bare fan-out baseline: the
// least a Go server does to write one card frame to every browser over
// loopback TCP, so the benchmark can say what part of serve's push
// latency is serve and what part is the machine (the kernel's loopback
// write per browser, and the readers sharing the cores).
//
// It listens on 127.0.0.1:0 and prints "listening on ADDR" on stdout.
// Each connection's request head is read and answered with an event
// stream's response head and one `status` event (the readers' "ready"),
// written without Content-Length or chunking, as serve's push stream is;
// after that the connection has no goroutine and no buffer of its own.
// Frames arrive on stdin, each as a 4-byte big-endian length then its
// bytes; each is written as it is to every connection, by GOMAXPROCS
// writers (-writers) that each take a fixed slice of the connections in
// order. A connection whose write fails is forgotten. It exits when stdin
// ends.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
)

const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\r\nevent: status\ndata: ready\n\n"

func main() {
	writers := flag.Int("writers", runtime.GOMAXPROCS(0), "goroutines writing each frame, each to its own slice of the connections")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())

	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				if err := greet(c); err != nil {
					c.Close()
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}()
		}
	}()

	in := bufio.NewReader(os.Stdin)
	for {
		var n uint32
		if err := binary.Read(in, binary.BigEndian, &n); err != nil {
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(in, frame); err != nil {
			return
		}
		mu.Lock()
		all := conns
		mu.Unlock()
		failed := fanOut(all, frame, max(*writers, 1))
		if len(failed) > 0 {
			mu.Lock()
			kept := conns[:0]
			for _, c := range conns {
				if !failed[c] {
					kept = append(kept, c)
				}
			}
			conns = kept
			mu.Unlock()
		}
	}
}

// greet reads c's request head (up to its blank line) and answers it.
func greet(c net.Conn) error {
	r := bufio.NewReaderSize(c, 1024)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 { // "\r\n" or "\n"
			break
		}
	}
	_, err := io.WriteString(c, head)
	return err
}

// fanOut writes frame to every connection of all, with writers goroutines
// each taking a contiguous slice in order; it returns the connections
// whose write failed.
func fanOut(all []net.Conn, frame []byte, writers int) map[net.Conn]bool {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed map[net.Conn]bool
	)
	per := (len(all) + writers - 1) / max(writers, 1)
	for lo := 0; lo < len(all); lo += per {
		part := all[lo:min(lo+per, len(all))]
		wg.Go(func() {
			for _, c := range part {
				if _, err := c.Write(frame); err != nil {
					c.Close()
					mu.Lock()
					if failed == nil {
						failed = map[net.Conn]bool{}
					}
					failed[c] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return failed
}
