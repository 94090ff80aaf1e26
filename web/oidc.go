package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDC is sign-in with the organisation's identity provider: the
// authorization code flow with PKCE, its state and nonce checked and the
// ID token verified (issuer, audience, expiry, and signature by the
// provider's published keys). The operator then holds the same revocable
// session as after any sign-in.
type OIDC struct {
	// Issuer is the provider's issuer URL (discovery is at
	// Issuer/.well-known/openid-configuration).
	Issuer string
	// ClientID and ClientSecret are this UI's registration at the provider.
	ClientID, ClientSecret string
	// PublicURL is the address browsers reach the UI's host at
	// (https://forms.example.com); the redirect URI is PublicURL, the base
	// path and auth/callback.
	PublicURL string
	// NameClaims are the ID token claims the operator's name is taken
	// from, the first present (preferred_username, then email, by default).
	NameClaims []string
	// RolesClaim is the claim the operator's groups are read from, for
	// their role ("groups" by default).
	RolesClaim string
	// Roles maps a role to the RolesClaim values that give it; an operator
	// holds the most allowed role any of their values gives, viewer when
	// none does.
	Roles map[Role][]string
	// Teams maps a RolesClaim value (a group at the provider) to the team
	// it puts the operator in, for a group named otherwise than its team
	// ("/eng/oncall" to oncall); a value named like a team of the routes
	// file is that team without it.
	Teams map[string]string
	// Recheck is how often a signed-in operator's role and teams are read
	// again from the provider (with the sign-in's refresh token), 5 min by
	// default: a role changed there ends the session, to sign in again in
	// the new one, and their teams follow.
	Recheck time.Duration
	// Timeout bounds each call to the provider, 10 s by default.
	Timeout time.Duration
	// HTTPClient calls the provider; nil: one bounded by Timeout.
	HTTPClient *http.Client
}

// errProvider marks a provider that did not answer as it should (down,
// slow, or misconfigured): the operator is told so, and to try again.
var errProvider = errors.New("web: the identity provider did not answer")

// oidcSignIn runs the code flow against one provider. The provider's
// discovery document is fetched at the first sign-in and kept once read,
// so a provider down when the UI starts costs nothing until someone signs
// in, and a sign-in while it is down is told so and may try again.
type oidcSignIn struct {
	cfg      OIDC
	redirect string // the redirect URI: PublicURL + base path + auth/callback
	after    string // where the provider's sign-out sends the browser back: the sign-in page
	now      func() time.Time
	client   *http.Client

	// teamNames are the routes file's teams as they are now (nil: none).
	teamNames func() []string

	mu sync.Mutex
	p  *oidcProvider // nil until discovered
}

// oidcProvider is what the discovery document told.
type oidcProvider struct {
	p          *oidc.Provider
	userInfo   bool // the provider has a userinfo_endpoint
	verifier   *oidc.IDTokenVerifier
	oauth      oauth2.Config
	endSession string // end_session_endpoint, "" when not offered
	host       string
}

func newOIDCSignIn(cfg OIDC, base string, now func() time.Time) *oidcSignIn {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if len(cfg.NameClaims) == 0 {
		cfg.NameClaims = []string{"preferred_username", "email"}
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = "groups"
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = 5 * time.Minute
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	public := strings.TrimSuffix(cfg.PublicURL, "/")
	return &oidcSignIn{cfg: cfg, redirect: public + base + "auth/callback", after: public + base + "signin", now: now, client: client}
}

// host is the provider's host, as the sign-in page names it.
func (o *oidcSignIn) host() string {
	if u, err := url.Parse(o.cfg.Issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return o.cfg.Issuer
}

// provider discovers the provider, once: a failed discovery is tried
// again at the next sign-in.
func (o *oidcSignIn) provider(ctx context.Context) (*oidcProvider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p != nil {
		return o.p, nil
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.client), o.cfg.Timeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery at %s: %w", errProvider, o.cfg.Issuer, err)
	}
	var extra struct {
		EndSession string   `json:"end_session_endpoint"`
		UserInfo   string   `json:"userinfo_endpoint"`
		Scopes     []string `json:"scopes_supported"`
	}
	if err := p.Claims(&extra); err != nil {
		return nil, fmt.Errorf("%w: discovery at %s: %w", errProvider, o.cfg.Issuer, err)
	}
	scopes := []string{oidc.ScopeOpenID, "profile", "email"}
	if slices.Contains(extra.Scopes, oidc.ScopeOfflineAccess) {
		// A refresh token, to read the role and teams again at each
		// recheck; asked only of a provider that says it issues them
		// (some refuse a scope they do not know).
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	o.p = &oidcProvider{
		p: p, userInfo: extra.UserInfo != "",
		verifier:   p.VerifierContext(oidc.ClientContext(context.Background(), o.client), &oidc.Config{ClientID: o.cfg.ClientID, Now: o.now}),
		oauth:      oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: o.redirect, Scopes: scopes},
		endSession: extra.EndSession,
		host:       o.host(),
	}
	return o.p, nil
}

// authOrigin is the origin of the provider's authorization endpoint,
// where a sign-in sends the browser ("" when the provider is not
// discovered: it did not answer).
func (o *oidcSignIn) authOrigin(ctx context.Context) string {
	p, err := o.provider(ctx)
	if err != nil {
		return ""
	}
	u, err := url.Parse(p.oauth.Endpoint.AuthURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// oidcFlow is one sign-in under way: what the callback must find again.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	Expires  int64  `json:"e"` // Unix seconds
	// Handoff, when set, is the hand-off of a panel's frame this sign-in
	// (in the window the frame opened) is for: the session is opened for
	// the frame to redeem (handoff.go), not in this window.
	Handoff        string `json:"h,omitempty"`
	HandoffExpires int64  `json:"he,omitempty"` // Unix seconds
}

// start returns the provider's authorization URL for a new flow.
func (o *oidcSignIn) start(ctx context.Context, f oidcFlow) (string, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return "", err
	}
	return p.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), nil
}

// errSignInRefused is a callback that signs no one in: the provider
// refused, the code was not taken, or the ID token did not verify.
var errSignInRefused = errors.New("web: the sign-in was refused")

// signedIn is what a sign-in at the provider told: the ID token's
// claims (with the userinfo answer's), its subject, and the refresh
// token ("" when the provider issued none).
type signedIn struct {
	claims  map[string]any
	subject string
	refresh string
}

// finish exchanges the callback's code (with the flow's PKCE verifier)
// and verifies the ID token, its nonce the flow's; it returns the
// token's claims, its subject and the refresh token.
func (o *oidcSignIn) finish(ctx context.Context, f oidcFlow, code string) (signedIn, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return signedIn{}, err
	}
	claims, subject, tok, err := o.exchange(ctx, p, f, code)
	if err != nil {
		return signedIn{}, err
	}
	return signedIn{claims: claims, subject: subject, refresh: tok.RefreshToken}, nil
}

// exchange is finish's exchange of the code and check of the ID token.
func (o *oidcSignIn) exchange(ctx context.Context, p *oidcProvider, f oidcFlow, code string) (map[string]any, string, *oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.client), o.cfg.Timeout)
	defer cancel()
	tok, err := p.oauth.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The provider answered, and refused: a used or expired code.
			return nil, "", nil, fmt.Errorf("%w: the provider did not take the code: %s %s", errSignInRefused, re.ErrorCode, re.ErrorDescription)
		}
		return nil, "", nil, fmt.Errorf("%w: token endpoint: %w", errProvider, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, "", nil, fmt.Errorf("%w: the provider's answer held no ID token", errSignInRefused)
	}
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		// go-oidc's errors name the failed check, never the token.
		return nil, "", nil, fmt.Errorf("%w: the ID token did not verify: %w", errSignInRefused, err)
	}
	if !equalSecret(idt.Nonce, f.Nonce) {
		return nil, "", nil, fmt.Errorf("%w: the ID token's nonce is not this sign-in's", errSignInRefused)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, "", nil, fmt.Errorf("%w: the ID token's claims: %w", errSignInRefused, err)
	}
	if p.userInfo && !o.hasClaims(claims) {
		if err := o.addUserInfo(ctx, p, tok, idt.Subject, claims); err != nil {
			return nil, "", nil, err
		}
	}
	return claims, idt.Subject, tok, nil
}

// errNoClaims is a recheck whose answer held none of the claims a role
// is read from (no ID token, no userinfo endpoint): the session keeps
// the role it has.
var errNoClaims = errors.New("web: the identity provider's refreshed tokens hold no claims to read the role from")

// refresh reads subject's claims again with the refresh token of their
// sign-in: the refreshed ID token's (verified, and about subject) and the
// userinfo answer's. It returns the claims and the refresh token to keep
// (the provider may issue a new one at each use). A provider that
// refuses the token (revoked, the person disabled) is errSignInRefused;
// one that does not answer, errProvider.
func (o *oidcSignIn) refresh(ctx context.Context, token, subject string) (map[string]any, string, error) {
	p, err := o.provider(ctx)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.client), o.cfg.Timeout)
	defer cancel()
	tok, err := p.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: token}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return nil, "", fmt.Errorf("%w: the provider did not take the refresh token: %s %s", errSignInRefused, re.ErrorCode, re.ErrorDescription)
		}
		return nil, "", fmt.Errorf("%w: token endpoint: %w", errProvider, err)
	}
	claims := map[string]any{}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		idt, err := p.verifier.Verify(ctx, raw)
		if err != nil {
			return nil, "", fmt.Errorf("%w: the refreshed ID token did not verify: %w", errSignInRefused, err)
		}
		if idt.Subject != subject {
			return nil, "", fmt.Errorf("%w: the refreshed ID token is about another subject", errSignInRefused)
		}
		if err := idt.Claims(&claims); err != nil {
			return nil, "", fmt.Errorf("%w: the refreshed ID token's claims: %w", errSignInRefused, err)
		}
	}
	if p.userInfo && !o.hasClaims(claims) {
		if err := o.addUserInfo(ctx, p, tok, subject, claims); err != nil {
			return nil, "", err
		}
	}
	if len(claims) == 0 {
		return nil, "", errNoClaims
	}
	return claims, tok.RefreshToken, nil
}

// hasClaims reports whether the ID token holds a name claim and the
// roles claim; many providers put them only in the userinfo answer when
// they issue an access token.
func (o *oidcSignIn) hasClaims(claims map[string]any) bool {
	if _, ok := claims[o.cfg.RolesClaim]; !ok && o.cfg.RolesClaim != "" {
		return false
	}
	for _, c := range o.cfg.NameClaims {
		if _, ok := claims[c]; ok {
			return true
		}
	}
	return false
}

// addUserInfo adds to claims those of the provider's userinfo answer that
// the ID token lacks (the verified ID token's win), when the answer is
// about the same subject.
func (o *oidcSignIn) addUserInfo(ctx context.Context, p *oidcProvider, tok *oauth2.Token, subject string, claims map[string]any) error {
	ui, err := p.p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return fmt.Errorf("%w: userinfo: %w", errProvider, err)
	}
	if ui.Subject != subject {
		return fmt.Errorf("%w: the userinfo answer is about another subject than the ID token", errSignInRefused)
	}
	var more map[string]any
	if err := ui.Claims(&more); err != nil {
		return fmt.Errorf("%w: userinfo claims: %w", errSignInRefused, err)
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}

// name is the operator's name from the first of the name claims that
// holds one, cleaned as any operator name ("" when none does).
func (o *oidcSignIn) name(claims map[string]any) string {
	for _, c := range o.cfg.NameClaims {
		if s, ok := claims[c].(string); ok {
			if n := operatorName(s); n != "" {
				return n
			}
		}
	}
	return ""
}

// groups are the claims' groups: RolesClaim, a string or a list of
// strings.
func (o *oidcSignIn) groups(claims map[string]any) []string {
	var groups []string
	switch v := claims[o.cfg.RolesClaim].(type) {
	case string:
		groups = []string{v}
	case []any:
		for _, g := range v {
			if s, ok := g.(string); ok {
				groups = append(groups, s)
			}
		}
	}
	return groups
}

// teams are the teams the claims' groups put the operator in: a group
// Teams maps is its team, and a group named like a team of the routes
// file is that team; each once, in the groups' order.
func (o *oidcSignIn) teams(claims map[string]any) []string {
	var known []string
	if o.teamNames != nil {
		known = o.teamNames()
	}
	var teams []string
	for _, g := range o.groups(claims) {
		t, ok := o.cfg.Teams[g]
		if !ok && slices.Contains(known, g) {
			t, ok = g, true
		}
		if ok && !slices.Contains(teams, t) {
			teams = append(teams, t)
		}
	}
	return teams
}

// role is the most allowed role the claims' groups (RolesClaim: a
// string or a list of strings) are mapped to; viewer when none is.
func (o *oidcSignIn) role(claims map[string]any) Role {
	groups := o.groups(claims)
	best := RoleViewer
	for _, role := range Roles {
		for _, want := range o.cfg.Roles[role] {
			for _, g := range groups {
				if g == want {
					best = role // Roles runs from the least allowed
				}
			}
		}
	}
	return best
}

// signOutURL is where sign-out sends the browser when the provider offers
// an end_session_endpoint, so the provider's own session ends too ("" when
// it does not, or is not discovered yet).
func (o *oidcSignIn) signOutURL() string {
	o.mu.Lock()
	p := o.p
	o.mu.Unlock()
	if p == nil || p.endSession == "" {
		return ""
	}
	u, err := url.Parse(p.endSession)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("client_id", o.cfg.ClientID)
	q.Set("post_logout_redirect_uri", o.after)
	u.RawQuery = q.Encode()
	return u.String()
}
