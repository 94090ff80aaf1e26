package webpush

import (
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/pushtest"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

var b64 = base64.RawURLEncoding

// decrypt is the browser's side of RFC 8291, from e2e/pushtest.
var decrypt = pushtest.Decrypt

// The test's decryption is right: it opens RFC 8291's own example.
func TestDecryptRFC8291Example(t *testing.T) {
	mustB64 := func(s string) []byte {
		b, err := b64.DecodeString(s)
		require.NoError(t, err)
		return b
	}
	ua, err := ecdh.P256().NewPrivateKey(mustB64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
	require.NoError(t, err)
	require.Equal(t, "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", b64.EncodeToString(ua.PublicKey().Bytes()))
	body := mustB64("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
	got, err := decrypt(body, ua, mustB64("BTBZMqHH6r4Tts7J_aSIgg"))
	require.NoError(t, err)
	assert.Equal(t, "When I grow up, I want to be a watermelon", string(got))
	body[len(body)-1] ^= 1
	_, err = decrypt(body, ua, mustB64("BTBZMqHH6r4Tts7J_aSIgg"))
	assert.Error(t, err, "a changed byte fails authentication")
}

// received is one push as the fake push service saw it.
type received struct {
	path    string
	header  http.Header
	body    []byte
	message Message
}

// pushService is a fake push service on loopback: it records each push
// and answers with the status its next func gives.
type pushService struct {
	srv    *httptest.Server
	got    chan received
	mu     sync.Mutex
	status map[string]int // by path; 201 otherwise
}

func newPushService(t *testing.T) *pushService {
	ps := &pushService{got: make(chan received, 64), status: map[string]int{}}
	ps.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ps.got <- received{path: r.URL.Path, header: r.Header.Clone(), body: body}
		ps.mu.Lock()
		code := ps.status[r.URL.Path]
		ps.mu.Unlock()
		if code == 0 {
			code = http.StatusCreated
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "<secret push service detail>")
	}))
	t.Cleanup(ps.srv.Close)
	return ps
}

func (ps *pushService) answer(path string, code int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.status[path] = code
}

// device is a browser's subscription keys, made by the test.
type testDevice struct {
	key  *ecdh.PrivateKey
	auth []byte
	sub  store.PushSubscription
}

func newDevice(t *testing.T, ps *pushService, path, operator string) testDevice {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return testDevice{key: k, auth: auth, sub: store.PushSubscription{
		Endpoint: ps.srv.URL + path, P256dh: b64.EncodeToString(k.PublicKey().Bytes()), Auth: b64.EncodeToString(auth),
		Operator: operator, Session: "s-" + operator, Created: t0,
	}}
}

// next waits for the next push and opens it with the keys of the
// device (of ds) it was sent to.
func (ps *pushService) next(t *testing.T, ds ...testDevice) received {
	t.Helper()
	select {
	case r := <-ps.got:
		require.Equal(t, "aes128gcm", r.header.Get("Content-Encoding"))
		var d testDevice
		for _, x := range ds {
			if x.sub.Endpoint == ps.srv.URL+r.path {
				d = x
			}
		}
		require.NotNil(t, d.key, "a push to %s, not to the device expected", r.path)
		plain, err := decrypt(r.body, d.key, d.auth)
		require.NoError(t, err)
		require.Less(t, len(plain), 3000, "payload under 3 KB")
		require.NoError(t, json.Unmarshal(plain, &r.message))
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no push arrived")
	}
	return received{}
}

// none asserts that nothing was pushed (everything is synchronous:
// Observe and Flush return after their pushes were answered).
func (ps *pushService) none(t *testing.T) {
	t.Helper()
	select {
	case r := <-ps.got:
		t.Fatalf("unexpected push to %s", r.path)
	default:
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixture struct {
	store  *sqlite.Journal
	pusher *Pusher
	clock  *clock
	ps     *pushService
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "j.db"), sqlite.Options{Host: "h"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	c := &clock{now: t0}
	p, err := New(Config{Subject: "mailto:ops@example.com", AllowLoopback: true, BasePath: "/forms/", Now: c.Now}, j)
	require.NoError(t, err)
	return &fixture{store: j, pusher: p, clock: c, ps: newPushService(t)}
}

func (f *fixture) subscribe(t *testing.T, path, operator string) testDevice {
	d := newDevice(t, f.ps, path, operator)
	require.NoError(t, f.store.SavePushSubscription(context.Background(), d.sub))
	return d
}

func card(id string, prompt string, expires time.Time) inbox.Card {
	return inbox.Card{
		ID: inbox.CardID(id), Key: inbox.RequestKey{Source: "aep://h/a", Session: "s1", RequestID: id},
		Agent: "builder", Capture: aep.CaptureFull, State: inbox.StatePending, ExpiresAt: expires,
		Request: aep.Request{Kind: "permission", Prompt: prompt},
	}
}

// verifyVAPID checks the Authorization header: a JWT for the push
// service's origin, expiring within a day, signed by the journal's key.
func verifyVAPID(t *testing.T, h http.Header, audience string, keys store.PushKeys) map[string]any {
	t.Helper()
	auth := h.Get("Authorization")
	require.True(t, strings.HasPrefix(auth, "vapid t="), auth)
	tok, k, ok := strings.Cut(strings.TrimPrefix(auth, "vapid t="), ", k=")
	require.True(t, ok)
	assert.Equal(t, keys.Public, k)
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	var hdr map[string]any
	raw, err := b64.DecodeString(parts[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &hdr))
	assert.Equal(t, "ES256", hdr["alg"])
	var claims map[string]any
	raw, err = b64.DecodeString(parts[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &claims))
	assert.Equal(t, audience, claims["aud"])
	assert.Equal(t, "mailto:ops@example.com", claims["sub"])
	exp := time.Unix(int64(claims["exp"].(float64)), 0)
	// The library stamps exp from the wall clock: within RFC 8292's 24 h.
	assert.True(t, exp.After(time.Now()) && exp.Before(time.Now().Add(24*time.Hour)), "exp %v", exp)

	pub, err := b64.DecodeString(keys.Public)
	require.NoError(t, err)
	x, y := elliptic.Unmarshal(elliptic.P256(), pub) //nolint:staticcheck // the one way to read an uncompressed point into ecdsa
	require.NotNil(t, x)
	sig, err := b64.DecodeString(parts[2])
	require.NoError(t, err)
	require.Len(t, sig, 64)
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	assert.True(t, ecdsa.Verify(&ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}, digest[:], r, s), "signed with the journal's key")
	return claims
}

// A new question reaches the device: the payload opens with the
// subscription's keys and says who asks, the first line of the question
// without its Markdown, and the deadline; TTL runs to the deadline and
// Urgency is high under 5 minutes; the VAPID JWT is for the push
// service's origin, signed with the key kept in the journal.
func TestNewQuestionIsPushedEncryptedAndSigned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.subscribe(t, "/push/alice-phone", "alice")

	f.pusher.Observe(ctx, card("c1", "## Deploy **v1.2** to [prod](https://x)?\nDetails below", t0.Add(3*time.Minute)))
	r := f.ps.next(t, d)
	assert.Equal(t, Message{Tag: "c1", Title: "builder asks", Body: "Deploy v1.2 to prod?\nAnswer by 12:03 UTC", URL: "/forms/#card-c1", Deadline: "2026-03-01T12:03:00Z"}, r.message)
	assert.Equal(t, "180", r.header.Get("TTL"))
	assert.Equal(t, "high", r.header.Get("Urgency"))
	keys, err := f.store.PushKeys(ctx, func() (store.PushKeys, error) { return store.PushKeys{}, errors.New("keys should exist") })
	require.NoError(t, err)
	verifyVAPID(t, r.header, f.ps.srv.URL, keys)
	assert.Equal(t, Counts{Sent: 1}, f.pusher.Counts())

	// No deadline: an hour's TTL, normal urgency; a second replica's
	// claim (the same journal) sends nothing more.
	f.clock.add(time.Minute)
	f.pusher.Observe(ctx, card("c2", "Go on?", time.Time{}))
	r = f.ps.next(t, d)
	assert.Equal(t, "3600", r.header.Get("TTL"))
	assert.Equal(t, "normal", r.header.Get("Urgency"))
	other, err := New(Config{Subject: "mailto:ops@example.com", AllowLoopback: true, Now: f.clock.Now}, f.store)
	require.NoError(t, err)
	other.Observe(ctx, card("c2", "Go on?", time.Time{}))
	f.ps.none(t)
}

// Text stays off the notification at capture metadata and when the
// operator setting hides it.
func TestQuestionTextHidden(t *testing.T) {
	f := newFixture(t)
	d := f.subscribe(t, "/p", "alice")
	c := card("c1", "secret plan", time.Time{})
	c.Capture = aep.CaptureMetadata
	f.pusher.Observe(context.Background(), c)
	assert.Equal(t, "A permission request", f.ps.next(t, d).message.Body)
}

// When the card settles, the notification is replaced under the same
// tag with what became of it; an expired one says so.
func TestSettledCardReplacesItsNotification(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.subscribe(t, "/p", "alice")
	c := card("c1", "Deploy?", time.Time{})
	f.pusher.Observe(ctx, c)
	f.ps.next(t, d)

	f.clock.add(11 * time.Second)
	// As the inbox has it once the agent records this UI's answer: the
	// agent names the UI ("ui/alice"), the verdict names the operator.
	c.State = inbox.StateAnswered
	c.Submission = &inbox.Submission{By: "alice", State: inbox.SubmissionAccepted}
	c.Recorded = &inbox.Recorded{By: "aepforms/alice", Via: "control"}
	f.pusher.Observe(ctx, c)
	r := f.ps.next(t, d)
	assert.Equal(t, "c1", r.message.Tag)
	assert.Equal(t, "Answered by alice", r.message.Body)
	assert.True(t, r.message.Closed)
	f.pusher.Observe(ctx, c)
	f.ps.none(t)

	e := card("c2", "Quick?", t0.Add(time.Minute))
	f.clock.add(11 * time.Second)
	f.pusher.Observe(ctx, e)
	f.ps.next(t, d)
	f.clock.add(time.Minute)
	f.pusher.Observe(ctx, e) // the sweep's change: the deadline passed
	r = f.ps.next(t, d)
	assert.Equal(t, "c2", r.message.Tag)
	assert.Equal(t, "Expired", r.message.Body)
}

// While one of the operator's pages is visible, their devices get no
// push; another operator's do.
func TestNoPushWhileAPageIsVisible(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.subscribe(t, "/alice", "alice")
	bob := f.subscribe(t, "/bob", "bob")
	require.NoError(t, f.store.SetPageVisible(ctx, "page-1", "alice", true, t0))
	f.pusher.Observe(ctx, card("c1", "Deploy?", time.Time{}))
	r := f.ps.next(t, bob)
	assert.Equal(t, "/bob", r.path)
	f.ps.none(t)

	// The page reported hidden: alice's device is pushed the next one.
	require.NoError(t, f.store.SetPageVisible(ctx, "page-1", "alice", false, t0))
	f.clock.add(time.Minute)
	alice := f.pusher.devices[f.ps.srv.URL+"/alice"]
	assert.Nil(t, alice)
	f.pusher.Observe(ctx, card("c2", "Again?", time.Time{}))
	got := map[string]bool{}
	for range 2 {
		got[(<-f.ps.got).path] = true
	}
	assert.Equal(t, map[string]bool{"/alice": true, "/bob": true}, got)
}

// A question is judged when it arrives: one that came while its operator
// was looking is not pushed later, when they look away and the card
// changes (a roster refresh republishes every card); nor does a question
// another device pushed come back as new.
func TestAQuestionIsPushedWhenItArrivesNotOnALaterUpdate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice := f.subscribe(t, "/alice", "alice")
	require.NoError(t, f.store.SetPageVisible(ctx, "page-1", "alice", true, t0))
	c1 := card("c1", "Deploy?", time.Time{})
	f.pusher.Observe(ctx, c1)
	require.NoError(t, f.store.SetPageVisible(ctx, "page-1", "alice", false, t0))
	f.clock.add(time.Minute)
	c1.Version++
	f.pusher.Observe(ctx, c1) // the same question, updated
	f.pusher.Observe(ctx, card("c2", "Again?", time.Time{}))
	r := f.ps.next(t, alice)
	assert.Equal(t, "c2", r.message.Tag, "only the question that arrived while no page was looked at")
	f.ps.none(t)
}

// A device whose subscription was removed (stopped, or its session
// signed out) is sent nothing more, not even what was queued for it.
func TestARemovedDeviceGetsNothingMore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.subscribe(t, "/p", "alice")
	f.pusher.Observe(ctx, card("c1", "One?", time.Time{}))
	f.ps.next(t, d)
	f.pusher.Observe(ctx, card("c2", "Two?", time.Time{})) // queued: the device's turn is in 10 s
	gone, err := f.store.DeletePushSubscription(ctx, "alice", d.sub.Endpoint)
	require.NoError(t, err)
	require.True(t, gone)
	f.clock.add(time.Minute)
	f.pusher.Flush(ctx)
	f.ps.none(t)
}

// A subscription the push service reports gone (410, 404) is deleted
// and counted; another failure is kept on the device (in words, not the
// service's body) and counted.
func TestGoneSubscriptionIsRemoved(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	gone := f.subscribe(t, "/gone", "alice")
	broken := f.subscribe(t, "/broken", "alice")
	f.ps.answer("/gone", http.StatusGone)
	f.ps.answer("/broken", http.StatusInternalServerError)
	f.pusher.Observe(ctx, card("c1", "Deploy?", time.Time{}))
	f.ps.next(t, gone, broken)
	f.ps.next(t, gone, broken)
	assert.Equal(t, Counts{Failed: 1, Gone: 1}, f.pusher.Counts())
	subs, err := f.store.PushSubscriptions(ctx)
	require.NoError(t, err)
	require.Len(t, subs, 1)
	assert.Equal(t, broken.sub.Endpoint, subs[0].Endpoint)
	assert.Equal(t, "The push service refused the last notification (HTTP 500).", subs[0].LastFailure)
	assert.NotContains(t, subs[0].LastFailure, "secret")
}

// At most one push per device per 10 s: what arrives meanwhile goes out
// as one "N new questions" once the device's turn comes.
func TestPushesAreCoalescedPerDevice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.subscribe(t, "/p", "alice")
	f.pusher.Observe(ctx, card("c1", "One?", time.Time{}))
	assert.Equal(t, "c1", f.ps.next(t, d).message.Tag)

	f.clock.add(2 * time.Second)
	f.pusher.Observe(ctx, card("c2", "Two?", time.Time{}))
	f.pusher.Observe(ctx, card("c3", "Three?", t0.Add(4*time.Minute)))
	f.pusher.Observe(ctx, card("c4", "Four?", time.Time{}))
	f.ps.none(t)
	f.clock.add(7 * time.Second)
	f.pusher.Flush(ctx)
	f.ps.none(t)

	f.clock.add(time.Second)
	f.pusher.Flush(ctx)
	r := f.ps.next(t, d)
	assert.Equal(t, SummaryTag, r.message.Tag)
	assert.Equal(t, "3 new questions", r.message.Title)
	assert.Equal(t, "high", r.header.Get("Urgency"), "one of them is due within 5 minutes")
	f.clock.add(10 * time.Second)
	f.pusher.Flush(ctx)
	f.ps.none(t)
	// Summed up, c2 has no notification of its own to replace.
	c2 := card("c2", "Two?", time.Time{})
	c2.State = inbox.StateResolved
	f.pusher.Observe(ctx, c2)
	f.pusher.Flush(ctx)
	f.ps.none(t)

	// A question that settles before its turn is not pushed at all.
	f.pusher.Observe(ctx, card("c5", "Five?", time.Time{}))
	f.ps.next(t, d)
	f.clock.add(time.Second)
	c6 := card("c6", "Six?", time.Time{})
	f.pusher.Observe(ctx, c6)
	c6.State = inbox.StateResolved
	f.pusher.Observe(ctx, c6)
	f.clock.add(10 * time.Second)
	f.pusher.Flush(ctx)
	f.ps.none(t)
}

func TestSubjectAndEndpointRules(t *testing.T) {
	for _, s := range []string{"mailto:ops@example.com", "https://example.com/contact"} {
		assert.NoError(t, CheckSubject(s), s)
	}
	assert.ErrorIs(t, CheckSubject(""), ErrNoSubject)
	for _, s := range []string{"ops@example.com", "http://example.com", "mailto:nobody", "https://"} {
		assert.ErrorIs(t, CheckSubject(s), ErrBadSubject, s)
	}
	for _, e := range []string{"https://fcm.googleapis.com/fcm/send/abc", "https://8.8.8.8/x"} {
		assert.NoError(t, CheckEndpoint(e, false), e)
	}
	for _, e := range []string{"http://push.example/x", "https://127.0.0.1/x", "https://localhost/x", "https://10.0.0.1/x",
		"https://192.168.1.1/x", "https://[::1]/x", "https://169.254.169.254/x", "https://100.64.0.1/x", "https://[fd00::1]/x", "https://[64:ff9b::a00:1]/x", "https://[2002:a00:1::1]/x", "https://u:p@push.example/x", "ftp://x"} {
		assert.ErrorIs(t, CheckEndpoint(e, false), ErrEndpoint, e)
	}
	assert.NoError(t, CheckEndpoint("http://127.0.0.1:9/x", true))
	assert.ErrorIs(t, CheckEndpoint("http://10.0.0.1/x", true), ErrEndpoint)
	// A name that resolves to a private address is refused when dialled.
	assert.ErrorIs(t, dialControl(false)("tcp", "10.1.2.3:443", nil), ErrEndpoint)
	assert.ErrorIs(t, dialControl(false)("tcp", "127.0.0.1:443", nil), ErrEndpoint)
	assert.NoError(t, dialControl(true)("tcp", "127.0.0.1:443", nil))
	assert.NoError(t, dialControl(false)("tcp", "8.8.8.8:443", nil))
}

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"# Deploy *now*?\nmore":           "Deploy now?",
		"\n\n> - Use `rm -rf` on __tmp__": "Use rm -rf on tmp",
		"1. See ![logo](x.png) [docs](u)": "See logo docs",
		"```\ncode\n```":                  "code",
		"   ":                             "",
	} {
		assert.Equal(t, want, FirstLine(in), in)
	}
}

// A device that allowed answering from notifications gets a permission
// request's options as actions in the option's own words, with a token
// bound to the card and the device's session; other devices, other
// kinds, placeholders and more than two options get none.
func TestActionsForAPermission(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := newDevice(t, f.ps, "/actions", "alice")
	d.sub.Actions = true
	require.NoError(t, f.store.SavePushSubscription(ctx, d.sub))
	c := card("c1", "Run `make release`?", t0.Add(5*time.Minute))
	c.Request.Options = []aep.Option{{ID: "allow", Label: "Allow **once**"}, {ID: "deny", Label: "Deny"}}
	f.pusher.Observe(ctx, c)
	m := f.ps.next(t, d).message
	assert.Equal(t, []Action{{Action: "o0", Title: "Allow once", Sent: "Sent: Allow once"}, {Action: "o1", Title: "Deny", Sent: "Sent: Deny"}}, m.Actions)
	require.NotNil(t, m.Answer)
	assert.Equal(t, "/forms/cards/c1/notification-answer", m.Answer.URL)
	require.NoError(t, f.pusher.CheckAnswerToken(ctx, m.Answer.Token, "c1", "s-alice"))
	assert.ErrorIs(t, f.pusher.CheckAnswerToken(ctx, m.Answer.Token, "c2", "s-alice"), ErrAnswerToken, "another card")
	assert.ErrorIs(t, f.pusher.CheckAnswerToken(ctx, m.Answer.Token, "c1", "s-bob"), ErrAnswerToken, "another session")
	assert.ErrorIs(t, f.pusher.CheckAnswerToken(ctx, m.Answer.Token+"x", "c1", "s-alice"), ErrAnswerToken, "changed")
	f.clock.add(5 * time.Minute)
	assert.ErrorIs(t, f.pusher.CheckAnswerToken(ctx, m.Answer.Token, "c1", "s-alice"), ErrAnswerToken, "past the card's deadline")

	// A watch-only UI sends no answers: its notifications offer none.
	f.pusher.cfg.Viewer = inbox.Viewer{WatchOnly: true}
	w := card("cw", "Run `make release`?", time.Time{})
	w.Request.Options = c.Request.Options
	f.clock.add(time.Minute)
	f.pusher.Observe(ctx, w)
	m = f.ps.next(t, d).message
	assert.Equal(t, "cw", m.Tag)
	assert.Empty(t, m.Actions, "watch-only: nothing to answer with")
	assert.Nil(t, m.Answer)
	f.pusher.cfg.Viewer = inbox.Viewer{}

	for name, c := range map[string]inbox.Card{
		"three options": func() inbox.Card {
			c := card("c3", "?", time.Time{})
			c.Request.Options = []aep.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}, {ID: "c", Label: "C"}}
			return c
		}(),
		"no labels": func() inbox.Card {
			c := card("c4", "?", time.Time{})
			c.Request.Options = []aep.Option{{ID: "a"}, {ID: "b"}}
			return c
		}(),
		"metadata capture": func() inbox.Card {
			c := card("c5", "?", time.Time{})
			c.Capture = aep.CaptureMetadata
			c.Request.Options = []aep.Option{{ID: "a", Label: "A"}}
			return c
		}(),
		"not a permission": func() inbox.Card {
			c := card("c6", "?", time.Time{})
			c.Request.Kind = aep.KindInput
			c.Request.Options = []aep.Option{{ID: "a", Label: "A"}}
			return c
		}(),
	} {
		f.clock.add(time.Minute)
		f.pusher.Observe(ctx, c)
		m := f.ps.next(t, d).message
		assert.Empty(t, m.Actions, name)
		assert.Nil(t, m.Answer, name)
	}
}

// With WatchSessions, a push goes only to devices whose sign-in still
// counts, checked when it is sent, all of its devices' sign-ins in one
// call: a device whose sign-in ended is told nothing and its
// subscription removed (also one whose push waited for its turn while
// the sign-in ended); one live reports counting that is no sign-in of a
// browser (a Bearer script's) is pushed to; one made with no sign-in at
// all (while sign-in was off) is told nothing, and removed. When the
// sign-ins cannot be checked, nothing is pushed and every device kept.
func TestPushesGoOnlyToLiveSignIns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice := f.subscribe(t, "/alice", "alice")
	f.subscribe(t, "/bob", "bob")
	carol := f.subscribe(t, "/carol", "carol")
	script := newDevice(t, f.ps, "/script", "ci")
	script.sub.Session = "bearer"
	require.NoError(t, f.store.SavePushSubscription(ctx, script.sub))
	open := newDevice(t, f.ps, "/open", "")
	open.sub.Session = ""
	require.NoError(t, f.store.SavePushSubscription(ctx, open.sub))
	var mu sync.Mutex
	ended := map[string]bool{"s-bob": true}
	unreachable := false
	var asked [][]string
	f.pusher.WatchSessions(func(_ context.Context, hs []string) (map[string]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, slices.Sorted(slices.Values(hs)))
		if unreachable {
			return nil, errors.New("journal unreachable")
		}
		live := map[string]bool{}
		for _, h := range hs {
			live[h] = !ended[h]
		}
		return live, nil
	})
	paths := func(ds []store.PushSubscription) []string {
		var out []string
		for _, d := range ds {
			out = append(out, strings.TrimPrefix(d.Endpoint, f.ps.srv.URL))
		}
		return out
	}

	f.pusher.Observe(ctx, card("c1", "Deploy?", time.Time{}))
	got := map[string]bool{}
	for range 3 {
		got[f.ps.next(t, alice, carol, script).path] = true
	}
	f.ps.none(t)
	assert.Equal(t, map[string]bool{"/alice": true, "/carol": true, "/script": true}, got)
	assert.Equal(t, [][]string{{"bearer", "s-alice", "s-bob", "s-carol"}}, asked, "the sign-ins asked about once, together")
	subs, err := f.store.PushSubscriptions(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"/alice", "/carol", "/script"}, paths(subs), "the ended sign-in's device and the one of no sign-in are removed")

	// A question queued for alice's turn is not sent once her sign-in ended.
	f.clock.add(time.Second)
	f.pusher.Observe(ctx, card("c2", "Roll back?", time.Time{}))
	f.ps.none(t) // all wait for their turn
	mu.Lock()
	ended["s-alice"] = true
	mu.Unlock()
	f.clock.add(time.Minute)
	f.pusher.Flush(ctx)
	got = map[string]bool{}
	for range 2 {
		got[f.ps.next(t, alice, carol, script).path] = true
	}
	f.ps.none(t)
	assert.Equal(t, map[string]bool{"/carol": true, "/script": true}, got)
	subs, err = f.store.PushSubscriptions(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"/carol", "/script"}, paths(subs))

	// The sign-ins cannot be checked: nothing is pushed, nothing removed.
	mu.Lock()
	unreachable = true
	mu.Unlock()
	f.clock.add(time.Minute)
	f.pusher.Observe(ctx, card("c3", "Scale up?", time.Time{}))
	f.pusher.Flush(ctx)
	f.ps.none(t)
	subs, err = f.store.PushSubscriptions(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"/carol", "/script"}, paths(subs), "every device is kept")
}
