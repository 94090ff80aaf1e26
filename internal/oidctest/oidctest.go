// Package oidctest runs a real OpenID Connect provider in-process for
// tests: ZITADEL's example OP (its login form, its code flow with PKCE,
// its signed ID tokens) on loopback, with three users whose groups claim
// maps them to aepforms' roles, and the tampering the negative cases need
// (another nonce, another audience, another key, a provider that is
// down). It imports github.com/zitadel/oidc, which the aepforms binary
// must not carry: only tests import this package
// (TestBinaryCarriesNoProvider checks it).
package oidctest

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
	"slices"
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

const (
	// ClientID and ClientSecret are the UI's client at the provider.
	ClientID     = "aepforms"
	ClientSecret = "client-secret-for-tests"
	// Password is every user's password.
	Password = "verysecure"
)

// Groups are the provider's users (each user's name is its id) and the
// groups claim each one's ID token carries as a provider starts
// (Provider.SetGroups changes one's): vera is an auditor only (a viewer
// under any mapping of the tests), ann is on call (an answerer under
// answerer=oncall), ada an admin (admin=aepforms-admins); olga is on
// call in a group named otherwise than the team (/eng/oncall), otto is
// staff only, in no team.
var Groups = map[string][]string{
	"vera": {"auditors"},
	"ann":  {"oncall", "staff"},
	"ada":  {"aepforms-admins", "staff"},
	"olga": {"/eng/oncall", "staff"},
	"otto": {"staff"},
}

// users are the provider's users, by id.
type users map[string]*storage.User

func (u users) GetUserByID(id string) *storage.User         { return u[id] }
func (u users) GetUserByUsername(name string) *storage.User { return u[name] }
func (u users) ExampleClientID() string                     { return "service" }

// opStorage is the example OP's storage with a groups claim per user and
// the negative cases' tampering.
type opStorage struct {
	*storage.Storage

	mu       sync.Mutex
	nonce    string              // when set, the ID token's nonce instead of the sign-in's
	otherKey *rsa.PrivateKey     // when set, ID tokens are signed with it, not the published key
	groups   map[string][]string // each user's groups now
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
	s.mu.Lock()
	g, ok := s.groups[subject]
	s.mu.Unlock()
	if ok {
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
	if s.nonce == "" {
		// The example storage's own type: its refresh tokens are issued
		// to the client it names.
		return req, nil
	}
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

// Provider is the provider running on loopback until the test ends.
type Provider struct {
	// Issuer is its issuer URL: http://localhost:PORT ("localhost", not
	// 127.0.0.1, so that a cookie jar, which keeps cookies per host and
	// not per port, holds the provider's cookies apart from a UI's on
	// 127.0.0.1).
	Issuer string

	t  testing.TB
	st *opStorage
	// down makes the provider drop every connection unanswered, as one
	// that is down does.
	down atomic.Bool
	// audience, when set, is the audience of the ID tokens the token
	// endpoint answers with, signed again with the provider's own key.
	audience atomic.Pointer[[]string]
}

// Start starts the provider with the users of Groups, each with
// Password; the UI's client (ClientID) is registered with redirect as
// its one redirect URI.
func Start(t testing.TB, redirect string) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	issuer := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	us := users{}
	for name := range Groups {
		us[name] = &storage.User{ID: name, Username: name, Password: Password, FirstName: name, LastName: "Test",
			Email: name + "@example.com", EmailVerified: true, PreferredLanguage: language.English}
	}
	client := storage.WebClient(ClientID, ClientSecret, redirect)
	st := &opStorage{Storage: storage.NewStorageWithClients(us, map[string]*storage.Client{ClientID: client}), groups: map[string][]string{}}
	for name, g := range Groups {
		st.groups[name] = slices.Clone(g)
	}
	p := &Provider{t: t, Issuer: issuer, st: st}
	router := exampleop.SetupServer(issuer, st, nil, false)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if aud := p.audience.Load(); aud != nil && r.URL.Path == "/oauth/token" {
			rec := httptest.NewRecorder()
			router.ServeHTTP(rec, r)
			p.reAudience(w, rec, *aud)
			return
		}
		router.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// SetGroups makes user's groups claim groups from now on: the next
// token or userinfo answer about them carries it (a group change at the
// provider).
func (p *Provider) SetGroups(user string, groups ...string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.groups[user] = groups
}

// Down makes the provider drop every connection unanswered (true), or
// answer again (false).
func (p *Provider) Down(down bool) { p.down.Store(down) }

// IssueAudience makes the token endpoint's ID tokens carry aud as their
// audience, signed with the provider's own key: a provider issuing the
// UI a token meant for another client (the example OP always adds the
// client asking).
func (p *Provider) IssueAudience(aud []string) { p.audience.Store(&aud) }

// IssueNonce makes the ID tokens carry nonce, not the sign-in's.
func (p *Provider) IssueNonce(nonce string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.nonce = nonce
}

// SignWith makes the provider sign ID tokens with key, under its
// published key's id, without publishing key.
func (p *Provider) SignWith(key *rsa.PrivateKey) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.otherKey = key
}

// reAudience rewrites the token endpoint's answer in rec: its ID token's
// audience becomes aud, signed again with the provider's key.
func (p *Provider) reAudience(w http.ResponseWriter, rec *httptest.ResponseRecorder, aud []string) {
	var body map[string]any
	require.NoError(p.t, json.Unmarshal(rec.Body.Bytes(), &body))
	if raw, ok := body["id_token"].(string); ok {
		parts := strings.Split(raw, ".")
		require.Len(p.t, parts, 3)
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		require.NoError(p.t, err)
		var claims map[string]any
		require.NoError(p.t, json.Unmarshal(payload, &claims))
		claims["aud"] = aud
		delete(claims, "azp")
		key, err := p.st.Storage.SigningKey(context.Background())
		require.NoError(p.t, err)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.SignatureAlgorithm(), Key: key.Key()},
			(&jose.SignerOptions{}).WithHeader("kid", key.ID()))
		require.NoError(p.t, err)
		b, err := json.Marshal(claims)
		require.NoError(p.t, err)
		jws, err := signer.Sign(b)
		require.NoError(p.t, err)
		body["id_token"], err = jws.CompactSerialize()
		require.NoError(p.t, err)
	}
	out, err := json.Marshal(body)
	require.NoError(p.t, err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// Login signs user in at the provider's login form as a browser does:
// c (its cookie jar; it follows the provider's redirects and stops at
// the first answer that leaves the provider) loads authURL,
// the provider's authorization address a UI sent the browser to, and
// posts the form with Password. It returns the address the provider
// sends the browser back to (the UI's callback, not yet visited).
func Login(t testing.TB, c *http.Client, authURL, user string) string {
	t.Helper()
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	d, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the provider's login form")
	id, ok := d.Find(`input[name="id"]`).Attr("value")
	require.True(t, ok, "the provider's login form holds its request id")
	login := resp.Request.URL.ResolveReference(&url.URL{Path: "/login/username"})
	resp, err = c.PostForm(login.String(), url.Values{"id": {id}, "username": {user}, "password": {Password}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "the provider sends the browser back")
	return resp.Header.Get("Location")
}

// NewRSAKey is a fresh 2048-bit key.
func NewRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}
