package app

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --nats and its env: the servers split on commas into relay.NATSConfig
// with the stream, subject and replicas; serve's embedded relay ignores
// AEP_NATS_URL (it stays in memory); a replica count of 0 is a usage
// error.
func TestRelayNATSFlags(t *testing.T) {
	t.Parallel()
	rs, err := parseRelay([]string{"--nats-replicas", "1"}, envMap(map[string]string{
		"AEP_NATS_URL": "nats://a:4222, nats://b:4222", "AEP_NATS_STREAM": "S", "AEP_NATS_SUBJECT": "s"}), io.Discard)
	require.NoError(t, err)
	n := rs.config(nil).NATS
	assert.Equal(t, []string{"nats://a:4222", "nats://b:4222"}, n.URLs)
	assert.Equal(t, "S", n.Stream)
	assert.Equal(t, "s", n.Subject)
	assert.Equal(t, 1, n.Replicas)

	rs, err = parseRelay(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	assert.Empty(t, rs.config(nil).NATS.URLs, "no --nats: in memory")

	emb, err := embeddedRelaySettings(envMap(map[string]string{"AEP_NATS_URL": "nats://a:4222"}))
	require.NoError(t, err)
	assert.Empty(t, emb.config(nil).NATS.URLs, "serve's relay stays in memory")

	_, err = parseRelay([]string{"--nats-replicas", "0"}, envMap(nil), io.Discard)
	assert.ErrorIs(t, err, ErrUsage)
}

// A relay whose NATS servers do not answer exits at once with an error
// naming NATS, not a relay that listens and cannot keep anything.
func TestRelayNATSUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // a port nothing listens on
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	err = runRelay(ctx, []string{"--port", "0", "--nats", "nats://" + addr}, envMap(nil), nil, &bytes.Buffer{}, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connect to NATS")
	assert.NotContains(t, stderr.String(), "relay listening on")
}
