package answer

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// kept is a respond path that keeps what it was handed, held or not.
type kept struct {
	mu      sync.Mutex
	sent    []inbox.Submission
	dropped []inbox.Submission
	hold    bool // offer SubmitHeld (as respond.Client does)
}

func (k *kept) Submit(_ context.Context, s inbox.Submission) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sent = append(k.sent, s)
	return nil
}

func (k *kept) all() (sent, dropped []inbox.Submission) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.sent), slices.Clone(k.dropped)
}

// holding is kept with SubmitHeld: a command goes to sent when let go,
// to dropped when dropped.
type holding struct{ *kept }

func (h holding) SubmitHeld(_ context.Context, s inbox.Submission) (func(bool), error) {
	var once sync.Once
	return func(send bool) {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if send {
				h.sent = append(h.sent, s)
			} else {
				h.dropped = append(h.dropped, s)
			}
		})
	}, nil
}

// failing keeps nothing: every Record fails (a full disk).
type failing struct{ *inbox.MemoryJournal }

func (failing) Record(inbox.Submission) error { return errors.New("disk full") }

var seq atomic.Int64

// ask applies a permission request (Allow once / Deny) and returns its
// card's id; expires, when not zero, is its deadline.
func ask(t *testing.T, in *inbox.Inbox, id string, expires time.Time) inbox.CardID {
	t.Helper()
	data := map[string]any{"kind": "permission", "prompt": "Run npm test?",
		"options": []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}
	if !expires.IsZero() {
		data["expires_at"] = expires.Format(time.RFC3339)
	}
	e, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Source: "aep://h/agent/builder", Agent: "builder",
		Session: "s1", Capture: "full", Seq: aep.Int64(seq.Add(1)), Time: t0.Format(time.RFC3339), Data: data})
	require.NoError(t, err)
	in.Apply(e)
	cid := inbox.RequestKey{Source: "aep://h/agent/builder", Session: "s1", RequestID: id}.CardID()
	_, ok := in.Card(cid)
	require.True(t, ok)
	return cid
}

func newService(t *testing.T, sub Submitter, opts ...func(*inbox.Options)) (*Service, *inbox.Inbox) {
	t.Helper()
	o := inbox.Options{Journal: inbox.NewMemoryJournal(), Now: func() time.Time { return t0 }}
	for _, f := range opts {
		f(&o)
	}
	in := inbox.New(o)
	return New(Config{Inbox: in, Submitter: sub, Now: func() time.Time { return t0 }}), in
}

func allow(token string) Post {
	return Post{Token: token, Form: url.Values{"token": {token}, "option": {"0"}}, By: "alice"}
}

// isRefusal reports whether err is one of Refusals.
func isRefusal(err error) bool {
	return slices.ContainsFunc(Refusals, func(r error) bool { return errors.Is(err, r) })
}

// An answer is journaled before its command goes, and its command is
// held on the respond path while the journal writes it: let go by Send,
// once. The same form posted again is the kept answer: nothing new.
func TestBeginHoldsTheCommandUntilSend(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in := newService(t, holding{k})
	id := ask(t, in, "r1", time.Time{})
	p := allow("tok-1")
	p.Card = id

	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.True(t, a.Recorded())
	c, _ := in.Card(id)
	require.NotNil(t, c.Submission, "journaled and on its card before Send")
	assert.Equal(t, a.Submission.CommandID, c.Submission.CommandID)
	sent, _ := k.all()
	assert.Empty(t, sent, "the command waits for Send")

	responded := false
	require.NoError(t, svc.Send(context.Background(), a, func() {
		sent, _ := k.all()
		assert.Len(t, sent, 1, "a held command is let go before the response")
		responded = true
	}))
	assert.True(t, responded)

	again, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	assert.True(t, again.Kept, "the same token again is the kept answer")
	assert.False(t, again.Recorded())
	sent, dropped := k.all()
	assert.Len(t, sent, 1, "one command for one form")
	assert.Empty(t, dropped)
}

// A Submitter that cannot hold a command is handed it after the
// response, so a slow Submit does not keep the response waiting.
func TestSendQueuesAnUnheldCommandAfterTheResponse(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in := newService(t, k)
	p := allow("tok-1")
	p.Card = ask(t, in, "r1", time.Time{})
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, func() {
		sent, _ := k.all()
		assert.Empty(t, sent, "queued before the response")
	}))
	sent, _ := k.all()
	require.Len(t, sent, 1)
	assert.Equal(t, a.Submission.CommandID, sent[0].CommandID)
}

// Every way Begin and BeginBatch refuse is one of Refusals, and nothing
// is sent or held past it.
func TestEveryRefusalIsOneOfRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sub  func(*kept) Submitter
		opts []func(*inbox.Options)
		// do asks once (ask) and answers; want is the refusal.
		do   func(t *testing.T, svc *Service, in *inbox.Inbox) error
		want error
	}{
		{name: "gone", want: inbox.ErrNotFound, do: func(t *testing.T, svc *Service, _ *inbox.Inbox) error {
			p := allow("t")
			p.Card = "no-such-card"
			_, err := svc.Begin(context.Background(), p)
			return err
		}},
		{name: "watch-only", sub: func(*kept) Submitter { return nil }, want: inbox.ErrWatchOnly, do: begin(allow("t"))},
		{name: "no token", want: ErrNoToken, do: begin(Post{Form: url.Values{"option": {"0"}}})},
		{name: "invalid", want: ErrInvalid, do: begin(Post{Token: "t", Form: url.Values{"option": {"7"}}})},
		{name: "in flight", want: inbox.ErrInFlight, do: func(t *testing.T, svc *Service, in *inbox.Inbox) error {
			id := ask(t, in, "r1", time.Time{})
			first := allow("t1")
			first.Card = id
			_, err := svc.Begin(context.Background(), first)
			require.NoError(t, err)
			second := allow("t2")
			second.Card = id
			_, err = svc.Begin(context.Background(), second)
			return err
		}},
		{name: "expired", want: inbox.ErrExpired, do: func(t *testing.T, svc *Service, in *inbox.Inbox) error {
			p := allow("t")
			p.Card = ask(t, in, "r1", t0.Add(-time.Minute))
			_, err := svc.Begin(context.Background(), p)
			return err
		}},
		{name: "not recorded", want: inbox.ErrNotRecorded, opts: []func(*inbox.Options){func(o *inbox.Options) {
			o.Journal = failing{inbox.NewMemoryJournal()}
		}}, do: begin(allow("t"))},
		{name: "batch none chosen", want: ErrNoneChosen, do: batch(Batch{Token: "t"})},
		{name: "batch too many", want: ErrTooMany, do: batch(Batch{Token: "t", Cards: manyCards(MaxBatch + 1)})},
		{name: "batch replaces", want: ErrReplaces, do: batch(Batch{Token: "t", Cards: []inbox.CardID{"a"}, Replaces: "c1"})},
		{name: "batch no token", want: ErrNoToken, do: batch(Batch{Cards: []inbox.CardID{"a"}})},
		{name: "batch watch-only", sub: func(*kept) Submitter { return nil }, want: inbox.ErrWatchOnly, do: batch(Batch{Token: "t", Cards: []inbox.CardID{"a"}})},
		{name: "batch question of another shape", want: ErrShape, do: func(t *testing.T, svc *Service, in *inbox.Inbox) error {
			id := ask(t, in, "r1", time.Time{})
			items, err := svc.BeginBatch(context.Background(), Batch{Token: "t", Shape: "another", Cards: []inbox.CardID{id},
				Form: url.Values{"option": {"0"}}})
			require.NoError(t, err)
			require.Len(t, items, 1)
			return items[0].Err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := &kept{}
			var sub Submitter = holding{k}
			if tc.sub != nil {
				sub = tc.sub(k)
			}
			svc, in := newService(t, sub, tc.opts...)
			err := tc.do(t, svc, in)
			require.ErrorIs(t, err, tc.want)
			assert.True(t, isRefusal(err), "%v is not one of Refusals", err)
			sent, _ := k.all()
			assert.Empty(t, sent, "a refused answer sent nothing")
		})
	}
}

// begin asks once and begins p on the request's card.
func begin(p Post) func(t *testing.T, svc *Service, in *inbox.Inbox) error {
	return func(t *testing.T, svc *Service, in *inbox.Inbox) error {
		p.Card = ask(t, in, "r1", time.Time{})
		_, err := svc.Begin(context.Background(), p)
		return err
	}
}

func batch(b Batch) func(t *testing.T, svc *Service, in *inbox.Inbox) error {
	return func(t *testing.T, svc *Service, _ *inbox.Inbox) error {
		_, err := svc.BeginBatch(context.Background(), b)
		return err
	}
}

func manyCards(n int) []inbox.CardID {
	ids := make([]inbox.CardID, n)
	for i := range ids {
		ids[i] = inbox.CardID("c" + strings.Repeat("x", i+1))
	}
	return ids
}

// An answer the journal did not keep drops the command it held: never
// sent.
func TestNotRecordedDropsTheHeldCommand(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in := newService(t, holding{k}, func(o *inbox.Options) { o.Journal = failing{inbox.NewMemoryJournal()} })
	p := allow("t")
	p.Card = ask(t, in, "r1", time.Time{})
	_, err := svc.Begin(context.Background(), p)
	require.ErrorIs(t, err, inbox.ErrNotRecorded)
	sent, dropped := k.all()
	assert.Empty(t, sent)
	assert.Len(t, dropped, 1, "held while the journal was asked, then dropped")
}

// notRefusals are the sentinels of the inbox and of this package that
// the Service never returns as a refusal, and why.
var notRefusals = map[string]string{
	"inbox.ErrDuplicate":     "the same form posted again: Begin answers it Kept",
	"inbox.ErrJournalBehind": "the journal's notice; a Record it fails is ErrNotRecorded",
	"inbox.ErrNotHeld":       "Undo's answer (too late, or another instance holds it), never an answer's refusal",
	"answer.ErrNotHeld":      "inbox.ErrNotHeld, as Undo returns it",
	"inbox.ErrNotOpen":       "a claim's or an assignment's refusal (claim.go), never an answer's",
	"inbox.ErrNoClaimant":    "a claim's refusal (claim.go), never an answer's",
}

// sentinels are every sentinel error of the inbox and of this package,
// by name: TestRefusalsNameEverySentinel checks the list against their
// source, so a new one must be placed here, then in Refusals (and the
// web's refusal table) or in notRefusals.
var sentinels = map[string]error{
	"inbox.ErrNotFound": inbox.ErrNotFound, "inbox.ErrSettled": inbox.ErrSettled, "inbox.ErrExpired": inbox.ErrExpired, "inbox.ErrReadOnly": inbox.ErrReadOnly,
	"inbox.ErrInformational": inbox.ErrInformational, "inbox.ErrMalformed": inbox.ErrMalformed,
	"inbox.ErrTooManyControls": inbox.ErrTooManyControls, "inbox.ErrInFlight": inbox.ErrInFlight,
	"inbox.ErrDuplicate": inbox.ErrDuplicate, "inbox.ErrInvalidSubmission": inbox.ErrInvalidSubmission,
	"inbox.ErrOtherInFlight": inbox.ErrOtherInFlight, "inbox.ErrPeerQueued": inbox.ErrPeerQueued,
	"inbox.ErrWatchOnly": inbox.ErrWatchOnly, "inbox.ErrNotRecorded": inbox.ErrNotRecorded,
	"inbox.ErrJournalBehind": inbox.ErrJournalBehind,
	"answer.ErrNoToken":      ErrNoToken, "answer.ErrInvalid": ErrInvalid, "answer.ErrNoneChosen": ErrNoneChosen,
	"answer.ErrTooMany": ErrTooMany, "answer.ErrReplaces": ErrReplaces, "answer.ErrShape": ErrShape,
	"answer.ErrPlaceholders": ErrPlaceholders, "inbox.ErrNotHeld": inbox.ErrNotHeld, "answer.ErrNotHeld": ErrNotHeld,
	"inbox.ErrNotOpen": inbox.ErrNotOpen, "inbox.ErrNoClaimant": inbox.ErrNoClaimant,
	"answer.ErrClaimed": ErrClaimed,
}

// TestRefusalsNameEverySentinel walks the inbox's and this package's
// source: every exported Err variable is one of Refusals, or is never
// returned by the Service as one (notRefusals).
func TestRefusalsNameEverySentinel(t *testing.T) {
	found := map[string]bool{}
	for pkg, dir := range map[string]string{"inbox": "../inbox", "answer": "."} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if strings.HasPrefix(n.Name, "Err") {
							found[pkg+"."+n.Name] = true
						}
					}
				}
			}
		}
	}
	for name := range found {
		err, ok := sentinels[name]
		if !assert.True(t, ok, "%s is a sentinel the test does not know: add it to sentinels, then to Refusals or notRefusals", name) {
			continue
		}
		if _, never := notRefusals[name]; never {
			assert.False(t, slices.Contains(Refusals, err), "%s is in both Refusals and notRefusals", name)
			continue
		}
		assert.True(t, slices.Contains(Refusals, err), "%s is neither in Refusals nor in notRefusals", name)
	}
	for name := range sentinels {
		assert.True(t, found[name], "%s is no longer a sentinel: remove it from sentinels", name)
	}
}

// resending is kept that also sends owed answers again.
type resending struct {
	*kept
	again []string
}

func (r *resending) SendAgain(_ context.Context, cmd string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.again = append(r.again, cmd)
	return nil
}

// "Send again" sends the card's owed command once more, never another:
// not one the card does not owe, not one no longer owed.
func TestSendAgainSendsOnlyTheOwedCommand(t *testing.T) {
	t.Parallel()
	rs := &resending{kept: &kept{}}
	svc, in := newService(t, rs)
	p := allow("t1")
	p.Card = ask(t, in, "r1", time.Time{})
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))
	cmd := a.Submission.CommandID

	require.NoError(t, svc.SendAgain(context.Background(), p.Card, cmd))
	assert.Empty(t, rs.again, "in flight, not owed: nothing sent again")

	in.SettleSubmission(p.Card, cmd, inbox.SubmissionSending, inbox.ReasonTimeout, "no ack")
	require.NoError(t, svc.SendAgain(context.Background(), p.Card, "another"))
	assert.Empty(t, rs.again, "only the card's owed command")
	require.NoError(t, svc.SendAgain(context.Background(), p.Card, cmd))
	assert.Equal(t, []string{cmd}, rs.again)
	sent, _ := rs.all()
	assert.Len(t, sent, 1, "no new command")

	assert.ErrorIs(t, svc.SendAgain(context.Background(), "gone", cmd), inbox.ErrNotFound)
}
