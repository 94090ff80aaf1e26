package app

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/relay"
)

// notifyBuffer is a goroutine-safe writer that signals every write.
type notifyBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newNotifyBuffer() *notifyBuffer { return &notifyBuffer{wrote: make(chan struct{}, 1)} }

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer holds every one of subs.
func (b *notifyBuffer) waitFor(t *testing.T, subs ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s := b.String()
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			return
		}
		select {
		case <-b.wrote:
		case <-deadline:
			t.Fatalf("output never held %q; got:\n%s", subs, s)
		}
	}
}

func TestDemoAgentUsageErrors(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"capture none":    {"--capture", "none"},
		"unknown capture": {"--capture", "secret"},
		"unknown scenario": {
			"--scenario", "deploy,nope",
		},
		"reject rate above 1": {"--reject-rate", "2"},
		"bad relay URL":       {"--relay", "ftp://x"},
		"stray argument":      {"extra"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			err := Run(t.Context(), append([]string{"demo-agent"}, args...), func(string) string { return "" }, nil, &bytes.Buffer{}, &stderr)
			assert.Equal(t, 2, ExitCode(err), "exit status; stderr:\n%s", stderr.String())
			assert.Contains(t, stderr.String(), "aepforms demo-agent:")
		})
	}
}

func TestDemoAgentHelpListsScenarios(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := Run(t.Context(), []string{"demo-agent", "-h"}, func(string) string { return "AEP_TOKEN_SHOULD_NOT_SHOW" }, nil, &bytes.Buffer{}, &stderr)
	require.NoError(t, err)
	for _, s := range []string{"-relay", "-token", "-scenario", "-every", "-agent", "-ack-window", "-capture", "-reject-rate", "-never-ack", "standby", "deploy", "every-type"} {
		assert.Contains(t, stderr.String(), s)
	}
	assert.NotContains(t, stderr.String(), "AEP_TOKEN_SHOULD_NOT_SHOW")
}

func TestDemoAgentRunsAgainstARelay(t *testing.T) {
	t.Parallel()
	const token = "app-agent-token"
	rcfg := relay.DefaultConfig()
	rcfg.Token = token
	r := relay.New(rcfg)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
		srv.Close()
	})

	stderr := newNotifyBuffer()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	env := func(k string) string {
		if k == "AEP_TOKEN" {
			return token
		}
		return ""
	}
	go func() {
		done <- Run(ctx, []string{"demo-agent", "--relay", srv.URL, "--scenario", "standby,deploy", "--every", "0", "--agent", "app-test"},
			env, nil, &bytes.Buffer{}, stderr)
	}()
	stderr.waitFor(t, `msg="connected to relay"`, `msg="session opened" scenario=standby`, `msg="run started" scenario=standby`,
		`msg="request asked" scenario=deploy`)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("demo-agent did not stop after its ctx ended")
	}
	out := stderr.String()
	assert.Contains(t, out, `msg="demo agent stopped" sessions_ended=2`, "stopping closes the sessions, and says so once")
	assert.NotContains(t, out, token, "the token is never logged")
}
