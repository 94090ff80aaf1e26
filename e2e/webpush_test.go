package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/pushtest"
	"github.com/aepforms/aepforms/internal/agent"
)

// notification is a push payload as the service worker reads it.
type notification struct {
	Tag, Title, Body, URL string
	Actions               []struct{ Action, Title, Sent string }
	Answer                *struct{ URL, Token string }
}

// The whole way: a device that allowed answering from notifications is
// notification the demo agent's permission request (decrypted as the browser
// would) with its options as actions; the answer the service worker
// posts for one of them, posted twice, reaches the agent as exactly one
// command with that option; then the notification is replaced by what
// became of the question.
func TestAnswerFromNotification(t *testing.T) {
	t.Parallel()
	bodies := make(chan []byte, 16)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(ps.Close)
	s := startStack(t, stackOptions{uiEnv: map[string]string{"AEPFORMS_VAPID_SUBJECT": "mailto:ops@example.com", "AEPFORMS_PUSH_ALLOW_LOOPBACK": "1",
		// The settled card's replacement follows at once, not 10 s later.
		"AEPFORMS_PUSH_EVERY": "50ms"}})

	dev, err := pushtest.NewDevice()
	require.NoError(t, err)
	sub, err := json.Marshal(map[string]any{"endpoint": ps.URL + "/phone", "actions": true,
		"keys": map[string]string{"p256dh": dev.P256dh(), "auth": dev.AuthKey()}})
	require.NoError(t, err)
	post := func(path, ctype string, body []byte) *http.Response {
		req, err := http.NewRequest(http.MethodPost, s.uiURL+strings.TrimPrefix(path, "/"), bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Origin", s.origin)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusCreated, post("subscriptions", "application/json", sub).StatusCode)

	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioPermission}})
	session, _ := askedRequest(t, ag, agent.ScenarioPermission)
	next := func() notification {
		t.Helper()
		select {
		case b := <-bodies:
			plain, err := pushtest.Decrypt(b, dev.Key, dev.Auth)
			require.NoError(t, err)
			var m notification
			require.NoError(t, json.Unmarshal(plain, &m))
			return m
		case <-time.After(stackWait):
			t.Fatal("no push arrived")
		}
		return notification{}
	}
	m := next()
	assert.Equal(t, "Allow Bash to run rm -rf ./build && make release in the project directory?", strings.SplitN(m.Body, "\n", 2)[0])
	require.Len(t, m.Actions, 2)
	assert.Equal(t, []string{"Allow once", "Deny"}, []string{m.Actions[0].Title, m.Actions[1].Title}, "the options' own words")
	require.NotNil(t, m.Answer)

	// The worker's post, twice (a retry): one command.
	answer := url.Values{"token": {m.Answer.Token}, "option": {"1"}}.Encode()
	path := strings.TrimPrefix(m.Answer.URL, "/")
	require.Equal(t, http.StatusOK, post(path, "application/x-www-form-urlencoded", []byte(answer)).StatusCode)
	require.Equal(t, http.StatusOK, post(path, "application/x-www-form-urlencoded", []byte(answer)).StatusCode)
	got := awaitCommands(t, ag, session.ID, 1, nil)
	require.Len(t, got, 1, "exactly one command")
	assert.Contains(t, string(got[0].Raw), `"deny"`)

	settled := next()
	assert.Equal(t, m.Tag, settled.Tag, "the same notification, replaced")
	assert.NotEqual(t, m.Body, settled.Body)
	assert.Empty(t, settled.Actions)
}
