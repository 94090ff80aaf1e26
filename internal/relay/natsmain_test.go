package relay_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
	"github.com/aepforms/aepforms/internal/relay/natstest"
)

// natsEnv, set (to anything), runs this package's relay suite against
// relays on JetStream: a three-node NATS cluster in-process, each test's
// relay with a stream of its own. `make test` runs the package both ways.
const natsEnv = "AEPFORMS_TEST_RELAY_NATS"

// jsCluster is the package's cluster when natsEnv is set.
var jsCluster *natstest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(natsEnv) == "" {
		code := m.Run()
		if lazy.c != nil {
			lazy.c.Stop()
			_ = os.RemoveAll(lazy.dir)
		}
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "aepforms-nats-")
	if err == nil {
		jsCluster, err = natstest.Start(dir, 3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay tests on JetStream:", err)
		os.Exit(1)
	}
	code := m.Run()
	jsCluster.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// lazy is the cluster the multi-node tests start on first use when the
// suite runs in memory.
var lazy struct {
	once sync.Once
	c    *natstest.Cluster
	dir  string
	err  error
}

// cluster returns the package's NATS cluster, started on first use.
func cluster(t testing.TB) *natstest.Cluster {
	t.Helper()
	if jsCluster != nil {
		return jsCluster
	}
	lazy.once.Do(func() {
		if lazy.dir, lazy.err = os.MkdirTemp("", "aepforms-nats-"); lazy.err == nil {
			lazy.c, lazy.err = natstest.Start(lazy.dir, 3)
		}
	})
	require.NoError(t, lazy.err)
	return lazy.c
}

var streams atomic.Int64

// nodes serves n relays on one new stream of the package's cluster: one
// relay of n nodes. It returns them and their config.
func nodes(t *testing.T, c relay.Config, n int) ([]*testRelay, relay.Config) {
	t.Helper()
	k := streams.Add(1)
	c.NATS.URLs, c.NATS.Stream, c.NATS.Subject = cluster(t).URLs(), fmt.Sprintf("N%d", k), fmt.Sprintf("n%d", k)
	out := make([]*testRelay, n)
	for i := range out {
		r := openOn(t, c)
		out[i] = serveRelay(t, r, httptest.NewServer(r.Handler()), c.Token)
	}
	return out, c
}

// newRelay returns relay.New(cfg), or, when the suite runs on JetStream,
// a relay opened on the package's cluster with a stream and subjects of
// its own (deleted when the test ends).
func newRelay(t testing.TB, cfg relay.Config) *relay.Relay {
	t.Helper()
	if jsCluster == nil {
		return relay.New(cfg)
	}
	n := streams.Add(1)
	cfg.NATS = relay.NATSConfig{URLs: jsCluster.URLs(), Stream: fmt.Sprintf("T%d", n), Subject: fmt.Sprintf("t%d", n)}
	return openOn(t, cfg)
}

// openOn opens a relay on cfg.NATS and deletes its stream when the test
// ends (after the relay's own cleanup, registered later, has run).
func openOn(t testing.TB, cfg relay.Config) *relay.Relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.ReadyTimeout)
	defer cancel()
	t.Cleanup(func() { deleteStream(t, cfg.NATS) })
	r, err := relay.Open(ctx, cfg)
	require.NoError(t, err)
	return r
}

func deleteStream(t testing.TB, c relay.NATSConfig) {
	nc, err := nats.Connect(c.URLs[0])
	if err != nil {
		t.Logf("delete stream %s: %v", c.Stream, err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = js.DeleteStream(ctx, c.Stream)
	_ = js.DeleteStream(ctx, c.Stream+"_CLAIMS")
}
