// Package natstest starts NATS servers in-process for tests: a JetStream
// cluster of n nodes on loopback, on ports the kernel picks, with data
// directories the caller gives (t.TempDir()). It imports nats-server,
// which the aepforms binary must not embed: only tests import this
// package (TestBinaryEmbedsNoNATSServer in internal/relay checks it).
package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReadyTimeout bounds a node's start and the cluster's first JetStream
// leader election: a deadline on events, not a wait.
const ReadyTimeout = 30 * time.Second

// MaxPayload is the nodes' max_payload: the relay's default body limit
// (16 MiB), so an event the relay accepts fits one NATS message.
const MaxPayload = 16 << 20

// Cluster is a running in-process JetStream cluster.
type Cluster struct {
	mu      sync.Mutex
	servers []*server.Server // nil once killed
	urls    []string
}

// Start starts an n-node cluster whose nodes keep their data under dir
// (one directory each). The caller must Stop it.
func Start(dir string, n int) (*Cluster, error) {
	c := &Cluster{}
	// A clustered JetStream node needs its routes configured from the
	// start: every node routes to every node (itself included, which it
	// skips), on cluster ports taken free from the kernel just before.
	var routes []*url.URL
	if n > 1 {
		for range n {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			routes = append(routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
		}
	}
	for i := range n {
		opts := &server.Options{
			ServerName: "n" + strconv.Itoa(i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, "n"+strconv.Itoa(i)),
			MaxPayload: MaxPayload,
			MaxPending: 4 * MaxPayload,
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			port, _ := strconv.Atoi(routes[i].Port())
			opts.Cluster = server.ClusterOpts{Name: "aep", Host: "127.0.0.1", Port: port}
			opts.Routes = routes
		}
		s, err := server.NewServer(opts)
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("natstest: node %d: %w", i, err)
		}
		s.Start()
		if !s.ReadyForConnections(ReadyTimeout) {
			s.Shutdown()
			c.Stop()
			return nil, fmt.Errorf("natstest: node %d not ready within %s", i, ReadyTimeout)
		}
		c.servers = append(c.servers, s)
		c.urls = append(c.urls, s.ClientURL())
	}
	if err := c.awaitJetStream(n); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// StartT starts an n-node cluster for one test, its data in t.TempDir(),
// stopped when the test ends.
func StartT(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := Start(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// awaitJetStream returns once a stream of n replicas can be made: the
// cluster elected its meta leader and every node has joined.
func (c *Cluster) awaitJetStream(n int) error {
	nc, err := nats.Connect(c.URL())
	if err != nil {
		return fmt.Errorf("natstest: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(ReadyTimeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "natstest_probe", Subjects: []string{"natstest.probe"}, Replicas: n, Storage: jetstream.MemoryStorage})
		if err == nil {
			err = js.DeleteStream(ctx, "natstest_probe")
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		time.Sleep(20 * time.Millisecond) // polling the election, which has no event to wait on from outside
	}
	return fmt.Errorf("natstest: JetStream of %d nodes not ready within %s: %w", n, ReadyTimeout, last)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("natstest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// URLs lists every node's client URL (killed ones too).
func (c *Cluster) URLs() []string { return append([]string(nil), c.urls...) }

// URL is URLs joined by commas, as nats.Connect and --nats take them.
func (c *Cluster) URL() string { return strings.Join(c.urls, ",") }

// StreamLeader returns the index of the node leading stream (of the
// default account), or an error when none does.
func (c *Cluster) StreamLeader(stream string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i, nil
		}
	}
	return -1, errors.New("natstest: no node leads stream " + stream)
}

// Kill shuts node i down at once: its clients are cut, its data stays
// on disk, the other nodes elect new leaders for what it led.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Stop shuts every node down.
func (c *Cluster) Stop() {
	for i := range c.servers {
		c.Kill(i)
	}
}
