package web

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Named operators' secrets, and their hashes (bcrypt at its cheapest cost,
// to keep the tests quick; argon2id for one).
const (
	annSecret = "ann-own-secret-0123456789"
	boSecret  = "bo-own-secret-0123456789"
)

func bcryptHash(t *testing.T, secret string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

func argon2idHash(t *testing.T, secret string) string {
	t.Helper()
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(secret), salt, 1, 8*1024, 1, 32)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", 8*1024, 1, 1,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// withOperators names the operators Ann (bcrypt) and Bo (argon2id); the
// shared secret is set too, to show it is then not accepted.
func withOperators(t *testing.T) option {
	return func(s *setup) {
		s.cfg.OperatorToken = secret
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret)}, {Name: "Bo Li", Hash: argon2idHash(t, boSecret)}}
	}
}

// With named operators, each signs in with their own name and secret, and
// the name recorded as who answered is the one they proved, whatever name
// another operator's secret is typed with.
func TestNamedOperatorSignsInAndAnswersAsThemselves(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withOperators(t), withConfig(behindProxy))
	id := h.ask("s1", "r1", nameForm())

	for name, tc := range map[string]struct{ name, secret string }{
		"the shared secret":         {"Ann", secret},
		"another operator's secret": {"Ann", boSecret},
		"no name":                   {"", annSecret},
		"an unknown name":           {"Eve", annSecret},
	} {
		r := h.postForm(nil, "signin", url.Values{"token": {tc.secret}, "name": {tc.name}}, "X-Forwarded-For", "192.0.2."+fmt.Sprint(len(name)))
		assert.Equal(t, http.StatusUnauthorized, r.StatusCode, "%s: got %d, want 401", name, r.StatusCode)
		assert.Nil(t, sessionCookie(r.Response), "%s: no session", name)
		assert.Contains(t, r.doc(t).Text(), "not one of this UI's operators", name)
	}

	for _, op := range []struct{ name, secret string }{{"Ann", annSecret}, {"Bo Li", boSecret}} {
		c := h.client()
		r := h.postForm(c, "signin", url.Values{"token": {op.secret}, "name": {op.name}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s signs in: got %d, want 303; %s", op.name, r.StatusCode, r.body)
		page := h.getPage(c, "")
		require.Equal(t, http.StatusOK, page.StatusCode)
		if op.name == "Ann" {
			action, token := answerForm(t, page.doc(t), id)
			ans := h.postForm(c, h.relative(action), url.Values{"token": {token}, "f0": {"svc"}})
			require.Equal(t, http.StatusSeeOther, ans.StatusCode, "Ann answers: %s", ans.body)
		}
	}
	subs := h.sub.all()
	require.Len(t, subs, 1)
	assert.Equal(t, "Ann", subs[0].By, "who answered is the authenticated name")
}

// A script names its operator in X-Operator-Name with that operator's own
// secret as Bearer; the shared secret and a missing name are refused.
func TestNamedOperatorBearer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withOperators(t))
	get := func(name, secret string) int {
		req := h.request(http.MethodGet, h.url("metrics"), nil, "Authorization", "Bearer "+secret)
		if name != "" {
			req.Header.Set("X-Operator-Name", name)
		}
		return h.do(nil, req).StatusCode
	}
	assert.Equal(t, http.StatusOK, get("Bo Li", boSecret))
	assert.Equal(t, http.StatusOK, get("Bo Li", boSecret), "again (the proven secret is remembered)")
	assert.Equal(t, http.StatusOK, get("Ann", annSecret))
	assert.Equal(t, http.StatusUnauthorized, get("", annSecret), "no name")
	assert.Equal(t, http.StatusUnauthorized, get("Ann", boSecret), "another's secret")
	assert.Equal(t, http.StatusUnauthorized, get("Ann", secret), "the shared secret")
}

// An operator whose secret changes is signed out; the others stay signed
// in.
func TestChangingAnOperatorsSecretSignsOutOnlyThem(t *testing.T) {
	t.Parallel()
	annHash, boHash := bcryptHash(t, annSecret), bcryptHash(t, boSecret)
	store := newMemorySessions() // the journal, kept across the restart
	before := newHarness(t, withSessions(store), withConfig(func(c *Config) {
		c.Operators = []Operator{{Name: "Ann", Hash: annHash}, {Name: "Bo", Hash: boHash}}
	}))
	cookie := func(name, secret string) *http.Cookie {
		r := before.postForm(nil, "signin", url.Values{"token": {secret}, "name": {name}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		return sessionCookie(r.Response)
	}
	ann, bo := cookie("Ann", annSecret), cookie("Bo", boSecret)

	after := newHarness(t, withSessions(store), withConfig(func(c *Config) {
		c.Operators = []Operator{{Name: "Ann", Hash: annHash}, {Name: "Bo", Hash: bcryptHash(t, "bo-new-secret-0123456789")}}
	}))
	status := func(ck *http.Cookie) int {
		req := after.request(http.MethodGet, after.url("metrics"), nil)
		req.AddCookie(ck)
		return after.do(nil, req).StatusCode
	}
	assert.Equal(t, http.StatusOK, status(ann), "Ann's secret did not change")
	assert.Equal(t, http.StatusUnauthorized, status(bo), "Bo's did: Bo signs in again")
	_, kept, err := store.LookupSession(t.Context(), hashSessionID(bo.Value))
	require.NoError(t, err)
	assert.False(t, kept, "Bo's refused session is deleted")
}

func TestParseOperators(t *testing.T) {
	t.Parallel()
	h := bcryptHash(t, annSecret)
	ops, err := ParseOperators(strings.NewReader("# operators\n\nAnn " + h + "\n  Bo Li\t" + h + "  \n"))
	require.NoError(t, err)
	assert.Equal(t, []Operator{{Name: "Ann", Hash: h}, {Name: "Bo Li", Hash: h}}, ops)

	ops, err = ParseOperators(strings.NewReader("Ann role=admin " + h + "\nBo Li role=viewer\t" + h + "\nCy role=answerer " + h + "\n"))
	require.NoError(t, err)
	assert.Equal(t, []Operator{{Name: "Ann", Hash: h, Role: RoleAdmin}, {Name: "Bo Li", Hash: h, Role: RoleViewer}, {Name: "Cy", Hash: h, Role: RoleAnswerer}}, ops)
	assert.Equal(t, "Ann role=admin "+h, OperatorLine(ops[0]))
	assert.Equal(t, "Cy "+h, OperatorLine(ops[2]))
	ops, err = ParseOperators(strings.NewReader("Ann Lee role=admin team=leads,oncall " + h + "\nBo team=oncall role=viewer " + h + "\nCy team=oncall " + h + "\n"))
	require.NoError(t, err)
	assert.Equal(t, []Operator{{Name: "Ann Lee", Hash: h, Role: RoleAdmin, Teams: []string{"leads", "oncall"}},
		{Name: "Bo", Hash: h, Role: RoleViewer, Teams: []string{"oncall"}}, {Name: "Cy", Hash: h, Teams: []string{"oncall"}}}, ops)
	assert.Equal(t, "Ann Lee role=admin team=leads,oncall "+h, OperatorLine(ops[0]))
	_, err = ParseOperators(strings.NewReader("Ann team=on%call " + h + "\n"))
	assert.ErrorIs(t, err, ErrOperatorsFile, "a team name that cannot be one")
	_, err = ParseOperators(strings.NewReader("Ann role=boss " + h + "\n"))
	assert.ErrorIs(t, err, ErrOperatorsFile, "an unknown role")

	for name, file := range map[string]string{
		"no hash":         "Ann\n",
		"not a hash":      "Ann secret\n",
		"named twice":     "Ann " + h + "\nAnn " + h + "\n",
		"control in name": "A\x01nn " + h + "\n",
		"bad argon2id":    "Ann $argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5\n",
	} {
		_, err := ParseOperators(strings.NewReader(file))
		assert.ErrorIs(t, err, ErrOperatorsFile, name)
	}
	assert.True(t, checkHash(argon2idHash(t, boSecret), boSecret))
	assert.False(t, checkHash(argon2idHash(t, boSecret), annSecret))
}

// With named operators the sign-in form asks for the operator's own name
// (required: it is who answered, proved by their secret), and a signed-in
// page offers sign-out.
func TestNamedOperatorSignInFormAsksForTheName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) {
		s.cfg.Operators = []Operator{{Name: "Ann", Hash: bcryptHash(t, annSecret)}}
	})
	d := h.getPage(h.client(), "signin").doc(t)
	name := d.Find("#signin-name")
	_, required := name.Attr("required")
	assert.True(t, required, "the name is required")
	assert.Contains(t, d.Find(`label[for="signin-name"]`).Text(), "(required)")

	c := h.client()
	r := h.postForm(c, "signin", url.Values{"token": {annSecret}, "name": {"Ann"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.body)
	page := h.getPage(c, "").doc(t)
	assert.Equal(t, 1, page.Find(`[data-testid="signout"]`).Length(), "a signed-in operator can sign out")
	assert.Contains(t, page.Find(`[data-testid="operator"]`).Text(), "Ann")
}
