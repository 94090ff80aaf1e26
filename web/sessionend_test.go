package web

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/store"
)

// endedWithin waits at most limit for the server to end the stream,
// skipping the comments before its end, and fails on a message: a stream
// of a session that ended sends no question.
func (ps *pushStream) endedWithin(limit time.Duration) {
	ps.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case it, ok := <-ps.items:
			if !ok {
				return
			}
			if !it.IsComment {
				ps.t.Fatalf("the ended session's stream was sent %s: %.200q", it.Event, it.Data)
			}
		case <-deadline:
			ps.t.Fatalf("the server did not end the push stream within %s", limit)
		}
	}
}

// signedOut reads the stream's last message: reload, "signed out" (the
// page reloads and meets the sign-in page), then the stream's end.
func (ps *pushStream) signedOut(limit time.Duration) {
	ps.t.Helper()
	select {
	case it, ok := <-ps.items:
		if !ok {
			ps.t.Fatalf("the stream ended without saying why: %v", ps.err) // closed: err is set
		}
		require.Equal(ps.t, "reload", it.Event, "got %s %.200q", it.Event, it.Data)
		require.Equal(ps.t, "signed out", it.Data)
	case <-time.After(limit):
		ps.t.Fatalf("nothing on the stream within %s of its session's end", limit)
	}
	ps.endedWithin(limit)
}

// cookiePush opens a push stream as the browser holding session cookie v.
func (h *harness) cookiePush(v string) *pushStream {
	h.t.Helper()
	ps := h.openPush("", "Cookie", cookieName+"="+v)
	require.Equal(h.t, "status", ps.next().Event)
	return ps
}

// The attack run: a /push stream kept open after POST /signout received
// the next question's full text and form token. Sign-out now ends the
// session's streams at once: the page is told to reload (and meets the
// sign-in page), and the next question is not sent.
func TestSignOutEndsTheSessionsPushStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	c := h.client()
	ck := h.signIn(c, "alice").Value
	first, second := h.cookiePush(ck), h.cookiePush(ck)
	bob := h.cookiePush(h.signIn(h.client(), "bob").Value)

	require.Equal(t, http.StatusSeeOther, h.postForm(c, "signout", nil).StatusCode)
	first.signedOut(time.Second)
	second.signedOut(time.Second)

	h.ask("s1", "r1", nameForm())
	cardMsg(t, bob.next()) // another operator's stream goes on
}

// "Sign out my other sessions" ends the other sessions' streams, not this
// one's.
func TestSignOutOthersEndsTheirPushStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret))
	here := h.client()
	mine := h.cookiePush(h.signIn(here, "alice").Value)
	theirs := h.cookiePush(h.signIn(h.client(), "alice").Value)

	require.Equal(t, http.StatusSeeOther, h.postForm(here, "signout/others", nil).StatusCode)
	theirs.signedOut(time.Second)
	h.ask("s1", "r1", nameForm())
	cardMsg(t, mine.next())
}

// A session that expires, or is ended by another replica sharing the
// journal, ends its streams within the recheck interval.
func TestExpiredOrRevokedSessionEndsItsPushStreams(t *testing.T) {
	t.Parallel()
	recheck := withConfig(func(c *Config) { c.SessionIdle = time.Hour; c.SessionRecheck = 20 * time.Millisecond })

	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, withToken(secret), recheck)
		ps := h.cookiePush(h.signIn(h.client(), "alice").Value)
		h.clk.Add(time.Hour)
		ps.signedOut(5 * time.Second)
	})
	t.Run("ended elsewhere", func(t *testing.T) {
		t.Parallel()
		shared := newMemorySessions()
		h := newHarness(t, withToken(secret), withSessions(shared), recheck)
		other := newHarness(t, withToken(secret), withSessions(shared), recheck)
		c := other.client()
		ps := h.cookiePush(other.signIn(c, "alice").Value)
		require.Equal(t, http.StatusSeeOther, other.postForm(c, "signout", nil).StatusCode)
		ps.signedOut(5 * time.Second)
	})
	t.Run("secret changed", func(t *testing.T) {
		t.Parallel()
		shared := newMemorySessions()
		old := newHarness(t, withToken(secret), withSessions(shared), recheck)
		ck := old.signIn(old.client(), "alice").Value
		h := newHarness(t, withToken(secret), withSessions(shared), recheck)
		ps := h.cookiePush(ck)
		// The journal's sessions now hold another secret's fingerprint, as
		// a replica started with a new secret rewrites them on sign-in.
		changeFingerprints(t, shared, "another secret entirely")
		ps.signedOut(5 * time.Second)
	})
}

// changeFingerprints rewrites every session's secret fingerprint to the
// one secret opens, as if each were opened with it.
func changeFingerprints(t *testing.T, s *memorySessions, secret string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, ss := range s.m {
		ss.Secret = secretFingerprint(sessionKey(secret))
		s.m[h] = ss
	}
	require.NotEmpty(t, s.m)
}

// One session holds at most MaxStreamsPerSession streams: the next is
// refused with 429, and one ending makes room. Bearer scripts count per
// operator name.
func TestStreamsPerSessionAreBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withToken(secret), withConfig(func(c *Config) { c.MaxStreamsPerSession = 2 }))
	ck := h.signIn(h.client(), "alice").Value
	h.cookiePush(ck)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url("push"), nil)
	require.NoError(t, err)
	req.Header.Set("Cookie", cookieName+"="+ck)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	refused := h.do(nil, h.request(http.MethodGet, h.url("push"), nil, "Cookie", cookieName+"="+ck))
	assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
	assert.NotEmpty(t, refused.Header.Get("Retry-After"))
	assert.Contains(t, refused.body, "live pages")
	h.cookiePush(h.signIn(h.client(), "alice").Value) // another sign-in of the same name has its own

	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool {
		r := h.do(nil, h.request(http.MethodGet, h.url("push"), nil, "Cookie", cookieName+"="+ck, "Last-Event-ID", "other-1"))
		return r.StatusCode == http.StatusOK
	}, wait, 10*time.Millisecond, "a stream that ended makes room")

	bearer := []string{"Authorization", "Bearer " + secret, "X-Operator-Name", "script"}
	h.openPush("", bearer...)
	h.openPush("", bearer...)
	assert.Equal(t, http.StatusTooManyRequests, h.do(nil, h.request(http.MethodGet, h.url("push"), nil, bearer...)).StatusCode)
}

// stallingSessions holds the first lookup after arm, having read the
// session, until release: a request whose sign-in was checked just before
// a sign-out ran.
type stallingSessions struct {
	*memorySessions
	stalled          atomic.Bool
	armed            atomic.Bool
	entered, release chan struct{}
}

// LookupSession stalls the first lookup once armed (the push request's);
// the others (the sign-out's own) pass.
func (s *stallingSessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	ss, ok, err := s.memorySessions.LookupSession(ctx, idHash)
	if s.armed.Load() && s.stalled.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return ss, ok, err
}

// A sign-out that lands between a push request's session check and its
// stream's start ends that stream too, at once, not at the next recheck:
// it would otherwise receive the next questions for up to
// SessionRecheck after the operator signed out.
func TestSignOutWhileAStreamStartsEndsIt(t *testing.T) {
	t.Parallel()
	stall := &stallingSessions{memorySessions: newMemorySessions(), entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, withToken(secret), withSessions(stall), withConfig(func(c *Config) { c.SessionRecheck = time.Hour }))
	c := h.client()
	ck := h.signIn(c, "alice").Value

	stall.armed.Store(true)
	opened := make(chan *pushStream, 1)
	go func() { opened <- h.openPush("", "Cookie", cookieName+"="+ck) }()
	<-stall.entered // the push request's session is read, still there
	require.Equal(t, http.StatusSeeOther, h.postForm(c, "signout", nil).StatusCode)
	close(stall.release)

	(<-opened).signedOut(5 * time.Second) // not even the status of the inbox
}

// hangingSessions never answers a lookup of one session (a journal that
// hangs on it) until the lookup's context ends.
type hangingSessions struct {
	*memorySessions
	hang    atomic.Value // string: the id hash whose lookups hang
	entered chan struct{}
	once    sync.Once
}

func (s *hangingSessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	if h, _ := s.hang.Load().(string); h == idHash {
		s.once.Do(func() { close(s.entered) })
		<-ctx.Done()
		return store.Session{}, false, ctx.Err()
	}
	return s.memorySessions.LookupSession(ctx, idHash)
}

// A session whose recheck hangs (the journal does not answer for it)
// does not keep the others' from their recheck: each lookup is bounded
// by the recheck interval.
func TestAHangingRecheckDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	sessions := &hangingSessions{memorySessions: newMemorySessions(), entered: make(chan struct{})}
	h := newHarness(t, withToken(secret), withSessions(sessions), withConfig(func(c *Config) { c.SessionRecheck = 20 * time.Millisecond }))
	hung := h.signIn(h.client(), "alice").Value
	c := h.client()
	ended := h.signIn(c, "bob").Value
	h.cookiePush(hung)
	ps := h.cookiePush(ended)

	sessions.hang.Store(hashSessionID(hung))
	<-sessions.entered
	require.NoError(t, sessions.memorySessions.DeleteSession(context.Background(), hashSessionID(ended))) // ended on another replica
	ps.signedOut(5 * time.Second)
}

// failingSessions fails the lookups of one session while it has
// failures left, and reports each lookup of it on asked (whether it
// failed).
type failingSessions struct {
	*memorySessions
	hash     atomic.Value // string: the id hash whose lookups fail
	failures atomic.Int64 // how many more of them fail
	asked    chan bool
}

func (s *failingSessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	if h, _ := s.hash.Load().(string); h == idHash {
		failed := s.failures.Add(-1) >= 0
		select {
		case s.asked <- failed:
		default:
		}
		if failed {
			return store.Session{}, false, errors.New("journal unreachable")
		}
	}
	return s.memorySessions.LookupSession(ctx, idHash)
}

// A session whose recheck fails (the journal down) keeps its streams
// through a few failed rechecks in a row, but not forever: it may have
// been signed out or expired meanwhile. After uncheckedRechecks failures
// in a row its streams are told to reload ("session unchecked") and end;
// fewer, then a lookup that answers, and the stream goes on.
func TestAnUncheckableSessionEndsItsStreams(t *testing.T) {
	t.Parallel()
	sessions := &failingSessions{memorySessions: newMemorySessions(), asked: make(chan bool, 1024)}
	h := newHarness(t, withToken(secret), withSessions(sessions), withConfig(func(c *Config) {
		c.SessionIdle, c.SessionRecheck = time.Hour, 20*time.Millisecond
	}))
	ck := h.signIn(h.client(), "alice").Value
	ps := h.cookiePush(ck)

	sessions.failures.Store(uncheckedRechecks - 1)
	sessions.hash.Store(hashSessionID(ck))
	deadline := time.After(wait)
	for answered := false; !answered; {
		select {
		case failed := <-sessions.asked:
			answered = !failed
		case <-deadline:
			t.Fatalf("no recheck of the session answered within %v", wait)
		}
	}
	h.ask("s1", "r1", nameForm())
	cardMsg(t, ps.next()) // the stream goes on after failures fewer than the limit

	sessions.failures.Store(1 << 40)
	select {
	case it, ok := <-ps.items:
		for ok && it.IsComment {
			it, ok = <-ps.items
		}
		if !ok {
			t.Fatalf("the stream ended without saying why: %v", ps.err) // closed: err is set
		}
		assert.Equal(t, "reload", it.Event)
		assert.Equal(t, "session unchecked", it.Data)
	case <-time.After(wait):
		t.Fatalf("the stream of a session that cannot be checked still runs %v later", wait)
	}
	ps.endedWithin(wait)
}
