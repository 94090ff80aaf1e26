package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqlite"
	"github.com/aepforms/aepforms/internal/webpush"
)

// pushRig is a UI with real Web Push over journal j: a Pusher signing
// with the journal's key and a push service on loopback that records
// which device each push went to.
type pushRig struct {
	h      *harness
	j      *sqlite.Journal
	pusher *webpush.Pusher
	ps     *httptest.Server
	got    chan string // the device (path) of each push
}

func newPushRig(t *testing.T, j *sqlite.Journal, opts ...option) *pushRig {
	r := &pushRig{j: j, got: make(chan string, 64)}
	r.ps = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.got <- req.URL.Path
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(r.ps.Close)
	withPusher := func(s *setup) {
		p, err := webpush.New(webpush.Config{Subject: "mailto:ops@example.com", AllowLoopback: true, Now: s.cfg.Now, Coalesce: time.Millisecond}, j)
		require.NoError(t, err)
		r.pusher = p
		s.deps.Notifier, s.deps.PushDevices, s.deps.Sessions = p, j, j
	}
	r.h = newHarness(t, append([]option{withToken(secret), withPusher}, opts...)...)
	return r
}

// subscribe subscribes the browser of c's device at path.
func (r *pushRig) subscribe(c *http.Client, path string) {
	r.h.t.Helper()
	res := r.h.sendJSON(c, http.MethodPost, "subscriptions", subscription(r.h.t, r.ps.URL+path))
	require.Equal(r.h.t, http.StatusCreated, res.StatusCode, res.body)
}

// askAndPush asks a new question and has the Pusher decide it (what its
// loop does on the inbox's change; done here in the test's goroutine, so
// every push it sends has reached the push service when it returns), and
// returns the devices pushed, by path.
func (r *pushRig) askAndPush(id string) map[string]int {
	r.h.t.Helper()
	cid := r.h.ask("s1", id, nameForm())
	c, ok := r.h.in.Card(cid)
	require.True(r.h.t, ok)
	r.h.clk.Add(time.Millisecond) // each device's turn has come again
	r.pusher.Observe(context.Background(), c)
	pushed := map[string]int{}
	for {
		select {
		case p := <-r.got:
			pushed[p]++
		default:
			return pushed
		}
	}
}

// devices is the journal's subscriptions, endpoint path by operator.
func (r *pushRig) devices() map[string]string {
	m := map[string]string{}
	for e, op := range endpoints(r.h.t, r.j) {
		m[e[len(r.ps.URL):]] = op
	}
	return m
}

// A device whose sign-in expired (unused past --session-idle) is pushed
// nothing for the next question, and its subscription is removed; a
// device of a sign-in still in use is pushed it.
func TestAnExpiredSignInsDeviceIsNotNotified(t *testing.T) {
	t.Parallel()
	const idle = time.Hour
	r := newPushRig(t, openJournal(t), withConfig(func(c *Config) { c.SessionIdle = idle }))
	h := r.h
	phone := h.client()
	h.signIn(phone, "alice")
	r.subscribe(phone, "/alice-phone")
	h.clk.Add(idle - time.Minute)
	laptop := h.client()
	h.signIn(laptop, "bob")
	r.subscribe(laptop, "/bob-laptop")
	h.clk.Add(2 * time.Minute) // alice's sign-in is now unused for longer than idle

	assert.Equal(t, map[string]int{"/bob-laptop": 1}, r.askAndPush("q1"), "only the live sign-in's device is notified")
	assert.Equal(t, map[string]string{"/bob-laptop": "bob"}, r.devices(), "the expired sign-in's subscription is removed")
}

// "Sign out my other sessions" ends those browsers' devices'
// notifications too: the next question goes to this browser's device
// only.
func TestSignOutOthersEndsTheirDevicesNotifications(t *testing.T) {
	t.Parallel()
	r := newPushRig(t, openJournal(t))
	h := r.h
	laptop, phone := h.client(), h.client()
	h.signIn(laptop, "alice")
	h.signIn(phone, "alice")
	r.subscribe(laptop, "/laptop")
	r.subscribe(phone, "/phone")
	require.Equal(t, map[string]int{"/laptop": 1, "/phone": 1}, r.askAndPush("q1"), "both devices are notified while both sign-ins count")

	require.Equal(t, http.StatusSeeOther, h.postForm(laptop, "signout/others", nil).StatusCode)
	assert.Equal(t, map[string]int{"/laptop": 1}, r.askAndPush("q2"), "the signed-out phone is told nothing more")
	assert.Equal(t, map[string]string{"/laptop": "alice"}, r.devices())
}

// A sign-in ended on another replica sharing the journal ("sign out my
// other sessions" there) ends the device's notifications from this
// replica too, with no sweep: its sign-in is checked when pushing.
func TestSignOutOnAnotherReplicaEndsTheDevicesNotifications(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	r := newPushRig(t, j)
	other := newHarness(t, withToken(secret), withPush(j))
	phone, desk := r.h.client(), r.h.client()
	r.h.signIn(phone, "alice")
	r.h.signIn(desk, "bob")
	r.subscribe(phone, "/alice-phone")
	r.subscribe(desk, "/bob-desk")
	require.Equal(t, map[string]int{"/alice-phone": 1, "/bob-desk": 1}, r.askAndPush("q1"))

	laptop := other.client()
	other.signIn(laptop, "alice")
	require.Equal(t, http.StatusSeeOther, other.postForm(laptop, "signout/others", nil).StatusCode)
	assert.Equal(t, map[string]int{"/bob-desk": 1}, r.askAndPush("q2"), "the phone signed out on the other replica is told nothing more")
	assert.Equal(t, map[string]string{"/bob-desk": "bob"}, r.devices())
}

// A device subscribed while sign-in was off (anyone who reached the UI
// could subscribe) is told nothing once sign-in is on, and its
// subscription is removed: it belongs to no sign-in that counts. A
// script's device, subscribed with the operator secret (Bearer), and a
// signed-in browser's are notified.
func TestADeviceSubscribedBeforeSignInIsNotNotifiedOnceSignInIsOn(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	r := newPushRig(t, j)
	open := newHarness(t, func(s *setup) { // the same journal, sign-in off
		p, err := webpush.New(webpush.Config{Subject: "mailto:ops@example.com", AllowLoopback: true, Now: s.cfg.Now}, j)
		require.NoError(t, err)
		s.deps.Notifier, s.deps.PushDevices, s.deps.Sessions = p, j, j
	})
	res := open.sendJSON(open.client(), http.MethodPost, "subscriptions", subscription(t, r.ps.URL+"/before-sign-in"))
	require.Equal(t, http.StatusCreated, res.StatusCode, res.body)

	phone := r.h.client()
	r.h.signIn(phone, "alice")
	r.subscribe(phone, "/alice-phone")
	res = r.h.sendJSON(nil, http.MethodPost, "subscriptions", subscription(t, r.ps.URL+"/script"), "Authorization", "Bearer "+secret)
	require.Equal(t, http.StatusCreated, res.StatusCode, res.body)

	assert.Equal(t, map[string]int{"/alice-phone": 1, "/script": 1}, r.askAndPush("q1"), "the device subscribed before sign-in is told nothing")
	devices := r.devices()
	assert.NotContains(t, devices, "/before-sign-in", "its subscription is removed")
	assert.Contains(t, devices, "/alice-phone")
	assert.Contains(t, devices, "/script")
}

// lookupCountingSessions is the journal's sessions, counting how often they
// are looked up.
type lookupCountingSessions struct {
	*sqlite.Journal
	one, many atomic.Int64
}

func (c *lookupCountingSessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	c.one.Add(1)
	return c.Journal.LookupSession(ctx, idHash)
}

func (c *lookupCountingSessions) LookupSessions(ctx context.Context, idHashes []string) (map[string]store.Session, error) {
	c.many.Add(1)
	return c.Journal.LookupSessions(ctx, idHashes)
}

// A push looks the devices' sign-ins up once, however many devices
// there are, not once a device: a question to a team of many operators
// is one read of the journal's sessions.
func TestAPushLooksTheSignInsUpOnce(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	counted := &lookupCountingSessions{Journal: j}
	r := newPushRig(t, j, func(s *setup) { s.deps.Sessions = counted })
	want := map[string]int{}
	for _, name := range []string{"alice", "bob", "carol", "dave", "erin"} {
		c := r.h.client()
		r.h.signIn(c, name)
		r.subscribe(c, "/"+name)
		want["/"+name] = 1
	}
	one, many := counted.one.Load(), counted.many.Load()
	assert.Equal(t, want, r.askAndPush("q1"), "every signed-in device is notified")
	assert.Equal(t, int64(0), counted.one.Load()-one, "no sign-in looked up one by one")
	assert.Equal(t, int64(1), counted.many.Load()-many, "the sign-ins looked up once for the push")
}

// A script's device (subscribed with the operator secret, Bearer) is
// notified only while that secret still opens the UI: once the secret
// is changed, it is told nothing, as a browser signed in with the old
// secret is signed out.
func TestAScriptsDeviceIsNotNotifiedOnceItsSecretChanges(t *testing.T) {
	t.Parallel()
	j := openJournal(t)
	const rotated = "a-new-operator-secret-after-rotation"
	before, after := newPushRig(t, j), newPushRig(t, j, withToken(rotated)) // one journal, the secret changed
	res := before.h.sendJSON(nil, http.MethodPost, "subscriptions", subscription(t, before.ps.URL+"/script"), "Authorization", "Bearer "+secret)
	require.Equal(t, http.StatusCreated, res.StatusCode, res.body)
	assert.Equal(t, map[string]int{"/script": 1}, before.askAndPush("q1"), "notified while its secret holds")

	phone := after.h.client()
	after.h.signIn(phone, "alice")
	after.subscribe(phone, "/alice-phone")
	assert.Equal(t, map[string]int{"/alice-phone": 1}, after.askAndPush("q2"), "a signed-in device is notified")
	select {
	case p := <-before.got:
		t.Fatalf("the script's device %s was notified after its secret changed", p)
	default:
	}
}
