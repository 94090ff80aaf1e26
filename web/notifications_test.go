package web

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// fakeNotifier is Web Push turned on, with a fixed key; it accepts
// https: endpoints only.
type fakeNotifier struct{}

func (fakeNotifier) PublicKey(context.Context) (string, error) { return "BPUBLICKEY", nil }
func (fakeNotifier) Accept(endpoint string) error {
	if !strings.HasPrefix(endpoint, "https://") {
		return errors.New("refused")
	}
	return nil
}
func (fakeNotifier) PushCounts() (int64, int64, int64) { return 4, 2, 1 }

func (fakeNotifier) WatchSessions(func(context.Context, []string) (map[string]bool, error)) {}

// CheckAnswerToken accepts "ok:{card}:{session}".
func (fakeNotifier) CheckAnswerToken(_ context.Context, tok, card, session string) error {
	if tok != "ok:"+card+":"+session {
		return errors.New("refused")
	}
	return nil
}

// withPush turns Web Push on, keeping devices and sessions in j.
func withPush(j *sqlite.Journal) option {
	return func(s *setup) {
		s.deps.Notifier, s.deps.PushDevices, s.deps.Sessions = fakeNotifier{}, j, j
	}
}

// subscription is a PushSubscription.toJSON() as a browser sends it.
func subscription(t *testing.T, endpoint string) string {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	b, err := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(auth)}})
	require.NoError(t, err)
	return string(b)
}

// sendJSON sends body to path with method, from this UI's own origin
// unless header overrides it.
func (h *harness) sendJSON(c *http.Client, method, path, body string, header ...string) response {
	h.t.Helper()
	hdr := append([]string{"Content-Type", "application/json", "Origin", h.srv.URL}, header...)
	return h.do(c, h.request(method, h.url(path), strings.NewReader(body), hdr...))
}

func endpoints(t *testing.T, j *sqlite.Journal) map[string]string {
	subs, err := j.PushSubscriptions(context.Background())
	require.NoError(t, err)
	m := map[string]string{}
	for _, s := range subs {
		m[s.Endpoint] = s.Operator
	}
	return m
}

// A signed-in operator subscribes a device with the browser's
// PushSubscription.toJSON(), sees it in their device list, and removes
// it; another operator cannot; a bad or refused subscription, and a
// cross-site post, keep nothing.
func TestSubscriptions(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j))
	alice, bob := h.client(), h.client()
	h.signIn(alice, "alice")
	h.signIn(bob, "bob")

	r := h.do(alice, h.request(http.MethodGet, h.url("subscriptions"), nil))
	require.Equal(t, http.StatusOK, r.StatusCode)
	var cfg pushConfig
	require.NoError(t, json.Unmarshal([]byte(r.body), &cfg))
	assert.True(t, cfg.Enabled)
	assert.Equal(t, "BPUBLICKEY", cfg.Key)
	assert.Equal(t, view.PushWord("subscribe"), cfg.Words["subscribe"])
	assert.Empty(t, cfg.Devices)

	phone := "https://push.example/alice-phone"
	r = h.sendJSON(alice, http.MethodPost, "subscriptions", subscription(t, phone))
	require.Equal(t, http.StatusCreated, r.StatusCode, r.body)
	assert.Equal(t, map[string]string{phone: "alice"}, endpoints(t, j))

	r = h.do(alice, h.request(http.MethodGet, h.url("subscriptions"), nil))
	require.NoError(t, json.Unmarshal([]byte(r.body), &cfg))
	require.Len(t, cfg.Devices, 1)
	assert.Equal(t, DeviceID(phone), cfg.Devices[0].ID)
	r = h.do(bob, h.request(http.MethodGet, h.url("subscriptions"), nil))
	require.NoError(t, json.Unmarshal([]byte(r.body), &cfg))
	assert.Empty(t, cfg.Devices, "bob sees only his own devices")

	for name, tc := range map[string]struct {
		body string
		code int
	}{
		"not JSON":      {"endpoint=x", http.StatusBadRequest},
		"no keys":       {`{"endpoint":"https://push.example/x","keys":{}}`, http.StatusBadRequest},
		"http endpoint": {subscription(t, "http://push.example/x"), http.StatusUnprocessableEntity},
	} {
		r := h.sendJSON(alice, http.MethodPost, "subscriptions", tc.body)
		assert.Equal(t, tc.code, r.StatusCode, name)
	}
	r = h.sendJSON(alice, http.MethodPost, "subscriptions", subscription(t, "https://push.example/evil"), "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, r.StatusCode)
	r = h.sendJSON(nil, http.MethodPost, "subscriptions", subscription(t, "https://push.example/anon"))
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	assert.Equal(t, map[string]string{phone: "alice"}, endpoints(t, j), "nothing else kept")

	r = h.sendJSON(bob, http.MethodDelete, "subscriptions", `{"endpoint":"`+phone+`"}`)
	assert.Equal(t, http.StatusNotFound, r.StatusCode, "not bob's to remove")
	r = h.sendJSON(alice, http.MethodDelete, "subscriptions", `{"endpoint":"`+phone+`"}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, r.StatusCode)
	r = h.sendJSON(alice, http.MethodDelete, "subscriptions", `{"endpoint":"`+phone+`"}`)
	assert.Equal(t, http.StatusNoContent, r.StatusCode)
	assert.Empty(t, endpoints(t, j))
}

// Signing out removes the subscription this browser made, not those
// of the operator's other devices.
func TestSignOutRemovesTheDevicesSubscription(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j))
	laptop, phone := h.client(), h.client()
	h.signIn(laptop, "alice")
	h.signIn(phone, "alice")
	require.Equal(t, http.StatusCreated, h.sendJSON(laptop, http.MethodPost, "subscriptions", subscription(t, "https://push.example/laptop")).StatusCode)
	require.Equal(t, http.StatusCreated, h.sendJSON(phone, http.MethodPost, "subscriptions", subscription(t, "https://push.example/phone")).StatusCode)

	require.Equal(t, http.StatusSeeOther, h.postForm(laptop, "signout", nil).StatusCode)
	assert.Equal(t, map[string]string{"https://push.example/phone": "alice"}, endpoints(t, j))
}

// A page's visibility report is kept for its operator; a cross-site one
// is refused.
func TestVisibilityReports(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j))
	c := h.client()
	h.signIn(c, "alice")
	visible := func() []string {
		ops, err := j.VisibleOperators(context.Background(), testNow.Add(-time.Minute))
		require.NoError(t, err)
		return ops
	}
	r := h.sendJSON(c, http.MethodPost, "visibility", `{"page":"p-123456789","visible":true}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, r.StatusCode)
	assert.Empty(t, visible())
	r = h.sendJSON(c, http.MethodPost, "visibility", `{"page":"<x>","visible":true}`)
	assert.Equal(t, http.StatusBadRequest, r.StatusCode)

	r = h.sendJSON(c, http.MethodPost, "visibility", `{"page":"p-123456789","visible":true}`)
	require.Equal(t, http.StatusNoContent, r.StatusCode)
	assert.Equal(t, []string{"alice"}, visible())
	r = h.sendJSON(c, http.MethodPost, "visibility", `{"page":"p-123456789","visible":false}`)
	require.Equal(t, http.StatusNoContent, r.StatusCode)
	assert.Empty(t, visible())
}

// Without a VAPID subject, push is off and the page is told so in the
// operator's words (the server flag is for the README and the log).
func TestPushOffSaysWhy(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withSessions(j), func(s *setup) { s.deps.PushDevices, s.deps.PushOff = j, view.PushWord("off-subject") })
	c := h.client()
	h.signIn(c, "alice")
	var cfg pushConfig
	r := h.do(c, h.request(http.MethodGet, h.url("subscriptions"), nil))
	require.NoError(t, json.Unmarshal([]byte(r.body), &cfg))
	assert.False(t, cfg.Enabled)
	assert.Equal(t, "Notifications to your devices are not set up on this server.", cfg.Off)
	assert.Empty(t, cfg.Key)
	assert.Equal(t, http.StatusNotFound, h.sendJSON(c, http.MethodPost, "subscriptions", subscription(t, "https://push.example/x")).StatusCode)
	assert.Empty(t, endpoints(t, j))
}

// The service worker and the manifest are served under the base path,
// with a CSP that lets the worker and the manifest load and nothing
// else; push outcomes are in /metrics.
func TestServiceWorkerManifestAndMetrics(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j), withConfig(func(c *Config) { c.BasePath = "/forms/" }))
	r := h.do(nil, h.request(http.MethodGet, h.url("sw.js"), nil))
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
	assert.Contains(t, r.body, "addEventListener('push'")
	csp := r.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "worker-src 'self'")
	assert.Contains(t, csp, "manifest-src 'self'")
	assert.Contains(t, csp, "script-src 'self';")

	r = h.do(nil, h.request(http.MethodGet, h.url("manifest.webmanifest"), nil))
	require.Equal(t, http.StatusOK, r.StatusCode)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &m))
	assert.Equal(t, "/forms/", m["scope"])
	assert.Equal(t, "/forms/", m["start_url"])
	assert.Equal(t, "standalone", m["display"])

	c := h.client()
	h.signIn(c, "alice")
	res, err := c.Get(h.url("metrics"))
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	assert.Contains(t, string(b), `aepforms_web_push_total{outcome="sent"} 4`)
	assert.Contains(t, string(b), `aepforms_web_push_total{outcome="failed"} 2`)
	assert.Contains(t, string(b), `aepforms_web_push_total{outcome="gone"} 1`)
}

// An answer chosen in a notification goes down the page's answer path:
// with a token for this card and this sign-in it becomes one command
// (posted again, still one); a token for another sign-in, or none, sends
// nothing.
func TestNotificationAnswer(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	h := newHarness(t, withToken(secret), withPush(j))
	c := h.client()
	ck := h.signIn(c, "alice")
	id := h.ask("s1", "r1", permissionReq())
	post := func(c *http.Client, tok string) response {
		return h.do(c, h.request(http.MethodPost, h.url("cards/"+string(id)+"/notification-answer"),
			strings.NewReader(url.Values{"token": {tok}, "option": {"1"}}.Encode()),
			"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL))
	}
	mine := "ok:" + string(id) + ":" + hashSessionID(ck.Value)

	assert.Equal(t, http.StatusForbidden, post(c, "ok:"+string(id)+":someone-else").StatusCode)
	assert.Equal(t, http.StatusForbidden, post(c, "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, post(nil, mine).StatusCode, "signed out: refused")
	assert.Empty(t, h.sub.all())

	r := post(c, mine)
	require.Equal(t, http.StatusOK, r.StatusCode, r.body)
	assert.Contains(t, r.body, `id="card-`+string(id)+`"`, "the card's fragment, as the page script gets")
	r = post(c, mine)
	require.Equal(t, http.StatusOK, r.StatusCode)
	subs := h.sub.all()
	require.Len(t, subs, 1, "one token, one command")
	assert.Equal(t, "deny", subs[0].Answer.Option)
	assert.Equal(t, "alice", subs[0].By)

	// Signing out ends the token with the session.
	other := h.ask("s1", "r2", permissionReq())
	tok := "ok:" + string(other) + ":" + hashSessionID(ck.Value)
	require.Equal(t, http.StatusSeeOther, h.postForm(c, "signout", nil).StatusCode)
	r = h.do(c, h.request(http.MethodPost, h.url("cards/"+string(other)+"/notification-answer"),
		strings.NewReader(url.Values{"token": {tok}, "option": {"0"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", h.srv.URL, "Cookie", cookieName+"="+ck.Value))
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	assert.Len(t, h.sub.all(), 1)
}

// A viewer is told of new questions on their devices, without answer
// buttons: the page is not offered "Allow answering from notifications"
// (the config says answer: false), and a subscription asking for
// buttons anyway is kept without them, so the sender puts none on its
// notifications; the server would refuse every press (403). An
// answerer's subscription keeps them.
func TestViewerIsNotifiedWithoutButtons(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	hash := bcryptHash(t, annSecret)
	h := newHarness(t, withPush(j), withConfig(func(c *Config) {
		c.Operators = []Operator{{Name: "Vera", Hash: hash, Role: RoleViewer}, {Name: "Ann", Hash: hash, Role: RoleAnswerer}}
	}))
	for _, tc := range []struct {
		name   string
		answer bool
	}{{"Vera", false}, {"Ann", true}} {
		c := h.client()
		r := h.postForm(c, "signin", url.Values{"token": {annSecret}, "name": {tc.name}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
		r = h.do(c, h.request(http.MethodGet, h.url("subscriptions"), nil))
		require.Equal(t, http.StatusOK, r.StatusCode)
		var cfg pushConfig
		require.NoError(t, json.Unmarshal([]byte(r.body), &cfg))
		assert.True(t, cfg.Enabled, "%s is offered notifications", tc.name)
		assert.Equal(t, tc.answer, cfg.Answer, "%s is offered answering from notifications", tc.name)

		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(subscription(t, "https://push.example/"+tc.name)), &body))
		body["actions"] = true
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = h.sendJSON(c, http.MethodPost, "subscriptions", string(b))
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s subscribes: %s", tc.name, r.body)
	}
	subs, err := j.PushSubscriptions(context.Background())
	require.NoError(t, err)
	actions := map[string]bool{}
	for _, s := range subs {
		actions[s.Operator] = s.Actions
	}
	assert.Equal(t, map[string]bool{"Vera": false, "Ann": true}, actions, "answering from notifications is kept for the answerer only")
}
