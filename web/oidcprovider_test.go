package web

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// The identity provider of the OIDC tests is ZITADEL's example OP, run
// in-process on loopback: its login form, its code flow with PKCE, its
// signed ID tokens. Its storage is wrapped (opStorage) to add each user's
// groups claim, and, for the negative cases, to issue what a broken or
// hostile provider would: another nonce, another audience, another key.

const (
	opClientID     = "aepforms"
	opClientSecret = "client-secret-for-tests"
	opPassword     = "verysecure"
)

// opUsers are the provider's users, by id: the user name is the id.
type opUsers map[string]*storage.User

func (u opUsers) GetUserByID(id string) *storage.User { return u[id] }
func (u opUsers) GetUserByUsername(name string) *storage.User {
	return u[name]
}
func (u opUsers) ExampleClientID() string { return "service" }

// opStorage is the example OP's storage with a groups claim per user and
// the negative cases' tampering.
type opStorage struct {
	*storage.Storage
	groups map[string][]string // user id → groups

	mu       sync.Mutex
	nonce    string          // when set, the ID token's nonce instead of the sign-in's
	otherKey *rsa.PrivateKey // when set, ID tokens are signed with it, not the published key
}

func (s *opStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, token, scopes); err != nil {
		return err
	}
	s.addGroups(ui, token.GetSubject())
	return nil
}

func (s *opStorage) SetUserinfoFromToken(ctx context.Context, ui *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, ui, tokenID, subject, origin); err != nil {
		return err
	}
	s.addGroups(ui, ui.Subject)
	return nil
}

func (s *opStorage) addGroups(ui *oidc.UserInfo, subject string) {
	if g, ok := s.groups[subject]; ok {
		ui.AppendClaims("groups", g)
	}
}

func (s *opStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	req, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return tamperedRequest{AuthRequest: req, nonce: s.nonce}, nil
}

func (s *opStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	other := s.otherKey
	s.mu.Unlock()
	if other == nil {
		return s.Storage.SigningKey(ctx)
	}
	published, err := s.Storage.SigningKey(ctx)
	if err != nil {
		return nil, err
	}
	return unpublishedKey{key: other, id: published.ID()}, nil
}

// tamperedRequest is an authorization request whose ID token is to carry
// another nonce.
type tamperedRequest struct {
	op.AuthRequest
	nonce string
}

func (r tamperedRequest) GetNonce() string {
	if r.nonce != "" {
		return r.nonce
	}
	return r.AuthRequest.GetNonce()
}

// unpublishedKey signs under the published key's id with a key the
// provider does not publish.
type unpublishedKey struct {
	key *rsa.PrivateKey
	id  string
}

func (k unpublishedKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k unpublishedKey) Key() any                                    { return k.key }
func (k unpublishedKey) ID() string                                  { return k.id }

// testOP is the provider running on loopback.
type testOP struct {
	t      *testing.T
	issuer string
	st     *opStorage
	// down makes the provider drop every connection unanswered, as one
	// that is down does.
	down atomic.Bool
	// audience, when set, is the audience of the ID tokens the token
	// endpoint answers with, signed again with the provider's own key: a
	// provider issuing this UI a token meant for another client (the
	// example OP always adds the client asking).
	audience atomic.Pointer[[]string]
}

// reAudience rewrites the token endpoint's answer in rec: its ID token's
// audience becomes aud, signed again with the provider's key.
func (o *testOP) reAudience(w http.ResponseWriter, rec *httptest.ResponseRecorder, aud []string) {
	var body map[string]any
	require.NoError(o.t, json.Unmarshal(rec.Body.Bytes(), &body))
	if raw, ok := body["id_token"].(string); ok {
		parts := strings.Split(raw, ".")
		require.Len(o.t, parts, 3)
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		require.NoError(o.t, err)
		var claims map[string]any
		require.NoError(o.t, json.Unmarshal(payload, &claims))
		claims["aud"] = aud
		delete(claims, "azp")
		key, err := o.st.Storage.SigningKey(context.Background())
		require.NoError(o.t, err)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.SignatureAlgorithm(), Key: key.Key()},
			(&jose.SignerOptions{}).WithHeader("kid", key.ID()))
		require.NoError(o.t, err)
		b, err := json.Marshal(claims)
		require.NoError(o.t, err)
		jws, err := signer.Sign(b)
		require.NoError(o.t, err)
		body["id_token"], err = jws.CompactSerialize()
		require.NoError(o.t, err)
	}
	out, err := json.Marshal(body)
	require.NoError(o.t, err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// startOP starts the provider with three users: vera (group auditors),
// ann (oncall) and ada (aepforms-admins), each with password opPassword;
// this UI's client is registered for redirect.
func startOP(t *testing.T, redirect string) *testOP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// "localhost", not the UI's 127.0.0.1: a cookie jar keeps cookies per
	// host, not per port.
	issuer := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	users := opUsers{}
	for _, name := range []string{"vera", "ann", "ada"} {
		users[name] = &storage.User{ID: name, Username: name, Password: opPassword, FirstName: name, LastName: "Test",
			Email: name + "@example.com", EmailVerified: true, PreferredLanguage: language.English}
	}
	client := storage.WebClient(opClientID, opClientSecret, redirect)
	st := &opStorage{Storage: storage.NewStorageWithClients(users, map[string]*storage.Client{opClientID: client}),
		groups: map[string][]string{"vera": {"auditors"}, "ann": {"oncall", "staff"}, "ada": {"aepforms-admins", "staff"}}}
	o := &testOP{t: t, issuer: issuer, st: st}
	router := exampleop.SetupServer(issuer, st, nil, false)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.down.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if aud := o.audience.Load(); aud != nil && r.URL.Path == "/oauth/token" {
			rec := httptest.NewRecorder()
			router.ServeHTTP(rec, r)
			o.reAudience(w, rec, *aud)
			return
		}
		router.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return o
}

// withOP makes the harness sign in at the provider: it is served on a
// listener taken first, so its public URL is the redirect the provider
// registers.
func withOP(t *testing.T, configure func(*OIDC)) (option, func() *testOP) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	public := "http://" + ln.Addr().String()
	o := startOP(t, public+"/auth/callback")
	return func(s *setup) {
		cfg := &OIDC{Issuer: o.issuer, ClientID: opClientID, ClientSecret: opClientSecret, PublicURL: public}
		if configure != nil {
			configure(cfg)
		}
		s.cfg.OIDC = cfg
		s.listener = ln
	}, func() *testOP { return o }
}

// browser is a browser's cookie jar and HTTP client for the OIDC flow:
// it follows the provider's redirects and stops at any answer of the UI.
func (h *harness) browser() *http.Client {
	c := h.client()
	ui := h.srv.Listener.Addr().String()
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == ui {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return c
}

// loginAtOP starts a sign-in from the UI with c and signs in at the
// provider's login form as user; it returns the callback URL the
// provider sends the browser back to (not yet visited).
func (h *harness) loginAtOP(c *http.Client, user string) string {
	h.t.Helper()
	return h.loginAtOPFrom(c, "auth/login", user)
}

// loginAtOPFrom is loginAtOP from the start address start (relative to
// the base path).
func (h *harness) loginAtOPFrom(c *http.Client, start, user string) string {
	h.t.Helper()
	r := h.startAt(c, start)
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "sign-in start: %s", r.body)
	resp, err := c.Get(r.Header.Get("Location"))
	require.NoError(h.t, err)
	d, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, resp.StatusCode, "the provider's login form")
	id, ok := d.Find(`input[name="id"]`).Attr("value")
	require.True(h.t, ok, "the provider's login form holds its request id")
	login := resp.Request.URL.ResolveReference(&url.URL{Path: "/login/username"})
	resp, err = c.PostForm(login.String(), url.Values{"id": {id}, "username": {user}, "password": {opPassword}})
	require.NoError(h.t, err)
	resp.Body.Close()
	require.Equal(h.t, http.StatusFound, resp.StatusCode, "the provider sends the browser back")
	back := resp.Header.Get("Location")
	require.True(h.t, strings.HasPrefix(back, h.url("auth/callback?")), "back to the callback: %s", back)
	return back
}

// startAt asks the UI to start a sign-in at start (relative to the base
// path), with c's cookies, and does not follow the answer.
func (h *harness) startAt(c *http.Client, start string) response {
	h.t.Helper()
	return h.do(stay(c), h.request(http.MethodGet, h.url(start), nil, "Accept", "text/html"))
}

// stay is c (its cookies) following no redirect.
func stay(c *http.Client) *http.Client {
	here := *c
	here.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &here
}

// callback visits the provider's callback URL with c.
func (h *harness) callback(c *http.Client, back string) response {
	h.t.Helper()
	return h.do(c, h.request(http.MethodGet, back, nil, "Accept", "text/html"))
}

// signInAtOP signs user in through the provider and returns the
// session cookie.
func (h *harness) signInAtOP(c *http.Client, user string) *http.Cookie {
	h.t.Helper()
	r := h.callback(c, h.loginAtOP(c, user))
	require.Equal(h.t, http.StatusSeeOther, r.StatusCode, "callback: %s", r.body)
	ck := sessionCookie(r.Response)
	require.NotNil(h.t, ck, "a sign-in at the provider opens a session")
	return ck
}

// newRSAKey is a fresh 2048-bit key.
func newRSAKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}
