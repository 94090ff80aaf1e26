package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// racedRules is the Runner seen through a store where another maker (an
// operator on another replica) keeps a rule between this post's count and
// its insert, once: the race for the last place under --rule-max.
type racedRules struct {
	Rules
	st *racedStore
}

func (r racedRules) Store() rules.Store { return r.st }

type racedStore struct {
	rules.Store
	once sync.Once
	fail error // CreateRule fails with it instead (a journal failure)
}

func (s *racedStore) RuleCount(ctx context.Context, now time.Time) (int, error) {
	n, err := s.Store.RuleCount(ctx, now)
	s.once.Do(func() {
		if s.fail == nil {
			err = errors.Join(err, s.Store.CreateRule(ctx, store.Rule{ID: "OTHER", Name: "Bob's", Maker: "bob", Created: now, Expires: now.Add(time.Hour),
				Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", "other-agent"), Answer: aep.Answer{Option: "allow"}}, 0))
		}
	})
	return n, err
}

func (s *racedStore) CreateRule(ctx context.Context, r store.Rule, max int) error {
	if s.fail != nil {
		return s.fail
	}
	return s.Store.CreateRule(ctx, r, max)
}

// An answer sent whose rule the journal then did not keep (another maker
// took the last place under --rule-max between this post's count and its
// insert, or the journal failed) is not left to the log: the operator is
// taken to the Rules page, which says their answer was sent and why its
// rule was not kept. The page script's post gets its card as usual and
// the same place to go (HeaderGo).
func TestRuleNotKeptAfterTheAnswerIsSaidSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, refused, says string
		fail                error
	}{
		{name: "lost the race for the last place", refused: "max", says: "at most 2 rules are kept at once"},
		{name: "journal failed", refused: "failed", says: "could not be kept", fail: errors.New("database is locked")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, script := range []bool{false, true} {
				st := &racedStore{fail: tc.fail}
				rh := newRulesHarnessWrapped(t, rules.Config{MaxRules: 2}, func(r Rules) Rules {
					st.Store = r.Store()
					return racedRules{Rules: r, st: st}
				}, withToken(secret))
				c := rh.client()
				rh.signIn(c, "alice")
				ctx := context.Background()
				require.NoError(t, rh.j.CreateRule(ctx, store.Rule{ID: "R1", Name: "Allow once", Maker: "alice", Created: testNow, Expires: testNow.Add(time.Hour),
					Match: rules.MatchOf(inbox.Card{Request: permissionReq()}, rules.Seen{}, store.ScopeUnscoped, "", "other-agent"), Answer: aep.Answer{Option: "allow"}}, 0))
				id := rh.ask("s1", "r1", permissionReq())
				action, token := answerForm(t, rh.getPage(c, "").doc(t), id)
				post := url.Values{"token": {token}, form.NameOption: {"0"}, form.NameRule: {"on"}}
				var hdr []string
				if script {
					hdr = []string{HeaderFragment, "card"}
				}
				r := rh.postForm(c, rh.relative(action), post, hdr...)
				want := "/rules?refused=" + tc.refused
				if script {
					require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.body)
					assert.Equal(t, 1, r.doc(t).Find("#"+domID(id)).Length(), "the script gets the card")
					assert.Equal(t, want, r.Header.Get(HeaderGo), "and where to go")
				} else {
					require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s", r.body)
					assert.Equal(t, want, r.Header.Get("Location"))
				}
				require.Len(t, rh.sub.all(), 1, "the answer is sent")
				list, err := rh.j.Rules(ctx)
				require.NoError(t, err)
				for _, rule := range list {
					if rule.ID != "R1" {
						assert.Equal(t, "bob", rule.Maker, "no rule of this post kept")
					}
				}

				page := rh.getPage(c, strings.TrimPrefix(want, "/")).doc(t)
				sum := page.Find(`[data-testid="error-summary"]`)
				require.Equal(t, 1, sum.Length(), "the Rules page says what happened")
				assert.Contains(t, sum.Text(), "Your answer was sent")
				assert.Contains(t, sum.Text(), tc.says)
			}
		})
	}
}

// The Rules page's note comes from a fixed list: any other value of
// ?refused= shows nothing (no text of the URL reaches the page).
func TestRulesPageRefusedIsAFixedList(t *testing.T) {
	t.Parallel()
	rh := newRulesHarness(t)
	for _, q := range []string{"rules?refused=%3Cb%3Ehi", "rules?refused=", "rules"} {
		d := rh.getPage(nil, q).doc(t)
		assert.Zero(t, d.Find(`[data-testid="error-summary"]`).Length(), q)
		assert.NotContains(t, d.Text(), "<b>hi", q)
	}
	d := rh.getPage(nil, "rules?refused=max").doc(t)
	assert.Equal(t, 1, d.Find(`[data-testid="error-summary"]`).Length())
}

// A UI without rules has no note to show: ?refused= is ignored there.
func TestRulesPageRefusedWithoutRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	d := h.getPage(nil, "rules?refused=max").doc(t)
	assert.Zero(t, d.Find(`[data-testid="error-summary"]`).Length())
	assert.NotContains(t, d.Text(), "at most 0 rules")
}
