package web

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"

	"github.com/aepforms/aepforms/internal/store"
)

// atProvider is what a session opened at the identity provider keeps
// besides every session's: the subject it signed in as, and its refresh
// token sealed (sealRefresh), nil when the provider issued none.
type atProvider struct {
	subject string
	refresh []byte
}

// atProvider keeps what a sign-in at the provider told: the person
// (their role and teams, seen now) and, for the session, the subject
// and the refresh token sealed.
func (a *auth) atProvider(ctx context.Context, name string, role Role, in signedIn) (atProvider, error) {
	if err := a.see(ctx, name, in.subject, role, a.oidc.teams(in.claims)); err != nil {
		return atProvider{}, err
	}
	at := atProvider{subject: in.subject}
	if in.refresh != "" {
		at.refresh = a.sealRefresh(in.refresh, in.subject)
	} else {
		a.log.Info("web: the identity provider issued no refresh token: this operator's role and teams are read again only at their next sign-in", "operator", name)
	}
	return at, nil
}

// see keeps person name's role and teams as seen now, the name being
// the account subject's: store.ErrNameTaken when it is another
// account's (the sign-in or session is refused). A journal that
// refuses otherwise is logged, and the sign-in or recheck goes on.
func (a *auth) see(ctx context.Context, name, subject string, role Role, teams []string) error {
	err := a.people.see(ctx, store.Person{Name: name, Subject: subject, Role: string(role), Teams: teams, LastSeen: a.now()})
	if errors.Is(err, store.ErrNameTaken) {
		a.log.Warn("web: the identity provider gave an operator's name to another of its accounts: refused", "operator", name)
		return err
	}
	if err != nil {
		a.log.Warn("web: the person signed in at the identity provider could not be kept", "operator", name, "err", err)
	}
	return nil
}

// refreshKey is the key refresh tokens are sealed with, derived from
// oidcKey (the provider's issuer and this UI's client id and secret):
// the journal alone does not give the tokens away.
func (a *auth) refreshKey() []byte {
	m := hmac.New(sha256.New, a.oidcKey)
	m.Write([]byte("aepforms refresh token seal v1"))
	return m.Sum(nil)
}

// sealRefresh seals a refresh token of subject (AES-256-GCM, a random
// nonce first).
func (a *auth) sealRefresh(token, subject string) []byte {
	block, _ := aes.NewCipher(a.refreshKey()) // a 32-byte key is always taken
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return gcm.Seal(nonce, nonce, []byte(token), []byte(subject))
}

// openRefresh is the refresh token sealed (sealRefresh) for subject;
// false when it was sealed with another key or for another subject.
func (a *auth) openRefresh(sealed []byte, subject string) (string, bool) {
	block, _ := aes.NewCipher(a.refreshKey())
	gcm, _ := cipher.NewGCM(block)
	if len(sealed) < gcm.NonceSize() {
		return "", false
	}
	b, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], []byte(subject))
	return string(b), err == nil
}

// recheck reads session s's role and teams again from the provider once
// OIDC.Recheck has passed since they were last read, one replica of all
// asking (the journal's claim): the person's teams follow; a role that
// changed there, or a refresh token the provider refuses (revoked, the
// person disabled), ends the session (false), to sign in again. A
// provider that does not answer leaves the session as it is until the
// next recheck. A session of a secret, or one without a refresh token,
// is not asked about (but its person stays seen).
func (a *auth) recheck(ctx context.Context, s store.Session) (bool, error) {
	if a.oidc == nil || s.Subject == "" {
		return true, nil
	}
	now := a.now()
	if now.Sub(s.Checked) < a.oidc.cfg.Recheck {
		return true, nil
	}
	// The provider is asked whatever becomes of the request or stream
	// that found the session due: the claim is taken.
	ctx = context.WithoutCancel(ctx)
	won, err := a.store.ClaimSessionCheck(ctx, s.IDHash, s.Checked, now)
	if err != nil || !won {
		if err != nil {
			a.log.Warn("web: a session's recheck at the identity provider could not be claimed", "err", err)
		}
		return true, nil
	}
	role, _ := a.sessionRole(s)
	token, ok := a.openRefresh(s.Refresh, s.Subject)
	if !ok {
		if err := a.see(ctx, s.Operator, s.Subject, role, a.teamsOf(s.Operator)); err != nil {
			return false, a.store.DeleteSession(ctx, s.IDHash)
		}
		return true, nil
	}
	claims, next, err := a.oidc.refresh(ctx, token, s.Subject)
	switch {
	case errors.Is(err, errSignInRefused):
		a.log.Info("web: the identity provider refused a session's refresh token: the session ends", "operator", s.Operator, "err", err)
		return false, a.store.DeleteSession(ctx, s.IDHash)
	case err != nil:
		a.log.Warn("web: the identity provider did not tell a session's role and teams: it keeps them until the next recheck", "operator", s.Operator, "err", err)
		return true, nil
	}
	if next != "" && next != token {
		if err := a.store.SetSessionRefresh(ctx, s.IDHash, a.sealRefresh(next, s.Subject)); err != nil {
			a.log.Warn("web: a session's new refresh token could not be kept", "operator", s.Operator, "err", err)
		}
	}
	got, teams := a.oidc.role(claims), a.oidc.teams(claims)
	if err := a.see(ctx, s.Operator, s.Subject, got, teams); err != nil {
		return false, a.store.DeleteSession(ctx, s.IDHash)
	}
	if got != role {
		a.log.Info("web: the identity provider changed an operator's role: their session ends, to sign in again in the new one",
			"operator", s.Operator, "was", role, "now", got, "teams", strings.Join(teams, ","))
		return false, a.store.DeleteSession(ctx, s.IDHash)
	}
	return true, nil
}

// teamsOf are the teams person name was last seen in.
func (a *auth) teamsOf(name string) []string {
	for _, p := range a.people.Get() {
		if p.Name == name {
			return p.Teams
		}
	}
	return nil
}
