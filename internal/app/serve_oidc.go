package app

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/routes"
	"github.com/aepforms/aepforms/web"
)

// oidcConfig is sign-in with the organisation's identity provider: where
// it is, this UI's registration there, the address browsers come back to,
// and the claim the operator's name is read from.
type oidcConfig struct {
	oidcIssuer     string
	oidcClientID   string
	oidcSecretFile string
	oidcSecret     string // read from oidcSecretFile, or AEPFORMS_OIDC_CLIENT_SECRET
	publicURL      string
	oidcNameClaim  string
	oidcTimeout    time.Duration
	oidcRolesClaim string
	oidcRoles      listFlag // --oidc-role ROLE=VALUE as given
	roles          map[web.Role][]string
	// The panel's sign-in through a window of its own: how long it may
	// take, how long the window waits for the panel, how often the panel
	// looks whether the window closed.
	panelSignInMaxAge, panelSignInWait, panelSignInPoll time.Duration
	oidcTeams                                           listFlag // --oidc-team GROUP=TEAM as given
	teams                                               map[string]string
	oidcRecheck                                         time.Duration
	oidcForget                                          time.Duration
}

func (c *oidcConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.oidcIssuer, "oidc-issuer", e.env("AEPFORMS_OIDC_ISSUER"), "sign operators in with this OpenID Connect provider (its issuer URL, e.g. https://login.example.com/realms/ops); https, or http on loopback only; needs --oidc-client-id, a client secret and --public-url (env AEPFORMS_OIDC_ISSUER)")
	fs.StringVar(&c.oidcClientID, "oidc-client-id", e.env("AEPFORMS_OIDC_CLIENT_ID"), "this UI's client id at the --oidc-issuer provider (env AEPFORMS_OIDC_CLIENT_ID)")
	fs.StringVar(&c.oidcSecretFile, "oidc-client-secret-file", e.env("AEPFORMS_OIDC_CLIENT_SECRET_FILE"), "file holding this UI's client secret at the provider (env AEPFORMS_OIDC_CLIENT_SECRET_FILE, or the secret itself in AEPFORMS_OIDC_CLIENT_SECRET)")
	fs.StringVar(&c.publicURL, "public-url", e.env("AEPFORMS_PUBLIC_URL"), "the address browsers reach this UI at, without the base path (https://forms.example.com); the provider sends them back to it, at --base-path + auth/callback (env AEPFORMS_PUBLIC_URL)")
	fs.StringVar(&c.oidcNameClaim, "oidc-name-claim", e.str("AEPFORMS_OIDC_NAME_CLAIM", "preferred_username"), "the ID token claim the operator's recorded name is read from; email when it is missing (env AEPFORMS_OIDC_NAME_CLAIM)")
	fs.StringVar(&c.oidcRolesClaim, "oidc-roles-claim", e.str("AEPFORMS_OIDC_ROLES_CLAIM", "groups"), "the ID token (or userinfo) claim holding the operator's groups, mapped to a role by --oidc-role (env AEPFORMS_OIDC_ROLES_CLAIM)")
	c.oidcRoles = e.list("AEPFORMS_OIDC_ROLES")
	fs.Var(&c.oidcRoles, "oidc-role", "ROLE=VALUE: an operator whose --oidc-roles-claim holds VALUE has ROLE (viewer, answerer or admin; the most allowed one wins), repeatable, e.g. --oidc-role admin=aepforms-admins --oidc-role answerer=oncall; with no match an operator is a viewer (env AEPFORMS_OIDC_ROLES, comma-separated)")
	fs.DurationVar(&c.panelSignInMaxAge, "panel-signin-max-age", e.dur("AEPFORMS_PANEL_SIGNIN_MAX_AGE", 10*time.Minute), "the panel inside a console's frame signs in with the provider in a window of its own: the window's sign-in must be done, and the panel pick it up, within this long (env AEPFORMS_PANEL_SIGNIN_MAX_AGE)")
	fs.DurationVar(&c.panelSignInWait, "panel-signin-wait", e.dur("AEPFORMS_PANEL_SIGNIN_WAIT", 15*time.Second), "the panel's sign-in window waits this long for the panel that opened it to hand it its sign-in, then says no panel did (env AEPFORMS_PANEL_SIGNIN_WAIT)")
	fs.DurationVar(&c.panelSignInPoll, "panel-signin-poll", e.dur("AEPFORMS_PANEL_SIGNIN_POLL", 400*time.Millisecond), "the panel looks this often whether its sign-in window was closed, to pick the sign-in up or say it did not happen (env AEPFORMS_PANEL_SIGNIN_POLL)")
	c.oidcTeams = e.list("AEPFORMS_OIDC_TEAMS")
	fs.Var(&c.oidcTeams, "oidc-team", "GROUP=TEAM: an operator whose --oidc-roles-claim holds GROUP is in TEAM, for a group named otherwise than its team, repeatable, e.g. --oidc-team /eng/oncall=oncall; a group named like a team of --routes is that team without it (env AEPFORMS_OIDC_TEAMS, comma-separated)")
	fs.DurationVar(&c.oidcRecheck, "oidc-recheck", e.dur("AEPFORMS_OIDC_RECHECK", 5*time.Minute), "how often a signed-in operator's role and teams are read again from the identity provider (with their sign-in's refresh token): a role changed there ends the session, to sign in again in the new one (env AEPFORMS_OIDC_RECHECK)")
	fs.DurationVar(&c.oidcForget, "oidc-forget", e.dur("AEPFORMS_OIDC_FORGET", web.DefaultForgetPeople), "how long a person the identity provider signed in stays listed (teams, the assign list, the Operators and routes page) without signing in or being rechecked (env AEPFORMS_OIDC_FORGET)")
	fs.DurationVar(&c.oidcTimeout, "oidc-timeout", e.dur("AEPFORMS_OIDC_TIMEOUT", 10*time.Second), "how long each call to the identity provider may take before the sign-in says it did not answer (env AEPFORMS_OIDC_TIMEOUT)")
}

func (c *oidcConfig) check(fs *flag.FlagSet, e envDefaults) error {
	if c.oidcIssuer == "" {
		for _, name := range []string{"oidc-client-id", "oidc-client-secret-file", "public-url", "oidc-role", "panel-signin-max-age", "panel-signin-wait", "panel-signin-poll", "oidc-team"} {
			if given(fs, name) {
				return fmt.Errorf("%w: --%s needs --oidc-issuer", ErrUsage, name)
			}
		}
		return nil
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"--oidc-timeout", c.oidcTimeout}, {"--panel-signin-max-age", c.panelSignInMaxAge},
		{"--panel-signin-wait", c.panelSignInWait}, {"--panel-signin-poll", c.panelSignInPoll},
		{"--oidc-recheck", c.oidcRecheck}, {"--oidc-forget", c.oidcForget}} {
		if err := positive(f.name, f.d); err != nil {
			return err
		}
	}
	if err := c.readTeams(); err != nil {
		return err
	}
	c.roles = map[web.Role][]string{}
	for _, m := range c.oidcRoles {
		name, value, ok := strings.Cut(m, "=")
		role, known := web.ParseRole(strings.TrimSpace(name))
		if !ok || !known || strings.TrimSpace(value) == "" {
			return fmt.Errorf("%w: --oidc-role %q: want ROLE=VALUE, ROLE one of viewer, answerer, admin (e.g. admin=aepforms-admins)", ErrUsage, m)
		}
		c.roles[role] = append(c.roles[role], strings.TrimSpace(value))
	}
	if err := checkIssuer(c.oidcIssuer); err != nil {
		return fmt.Errorf("%w: --oidc-issuer %q: %v", ErrUsage, c.oidcIssuer, err)
	}
	if c.oidcClientID == "" {
		return fmt.Errorf("%w: --oidc-issuer needs --oidc-client-id (env AEPFORMS_OIDC_CLIENT_ID): this UI's client id at the provider", ErrUsage)
	}
	if err := c.readSecret(e); err != nil {
		return err
	}
	if c.publicURL == "" {
		return fmt.Errorf("%w: --oidc-issuer needs --public-url (env AEPFORMS_PUBLIC_URL): the address browsers reach this UI at, where the provider sends them back", ErrUsage)
	}
	if err := checkPublicURL(c.publicURL); err != nil {
		return fmt.Errorf("%w: --public-url %q: %v", ErrUsage, c.publicURL, err)
	}
	return nil
}

// readTeams reads --oidc-team GROUP=TEAM into teams.
func (c *oidcConfig) readTeams() error {
	c.teams = map[string]string{}
	for _, m := range c.oidcTeams {
		i := strings.LastIndex(m, "=")
		if i < 0 {
			return fmt.Errorf("%w: --oidc-team %q: want GROUP=TEAM (e.g. /eng/oncall=oncall)", ErrUsage, m)
		}
		group, team := strings.TrimSpace(m[:i]), strings.TrimSpace(m[i+1:])
		switch {
		case group == "":
			return fmt.Errorf("%w: --oidc-team %q: want GROUP=TEAM, the group as the provider names it (e.g. /eng/oncall=oncall)", ErrUsage, m)
		case !routes.ValidTeamName(team):
			return fmt.Errorf("%w: --oidc-team %q: the team %q is not a team's name (1 to 64 letters, digits, '-', '_' or '.')", ErrUsage, m, team)
		}
		c.teams[group] = team
	}
	return nil
}

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// readSecret takes the client secret from --oidc-client-secret-file, or
// from AEPFORMS_OIDC_CLIENT_SECRET.
func (c *oidcConfig) readSecret(e envDefaults) error {
	if c.oidcSecretFile == "" {
		c.oidcSecret = strings.TrimSpace(e.env("AEPFORMS_OIDC_CLIENT_SECRET"))
		if c.oidcSecret == "" {
			return fmt.Errorf("%w: --oidc-issuer needs the client secret: --oidc-client-secret-file FILE, or AEPFORMS_OIDC_CLIENT_SECRET", ErrUsage)
		}
		return nil
	}
	b, err := os.ReadFile(c.oidcSecretFile)
	if err != nil {
		return fmt.Errorf("%w: --oidc-client-secret-file: %w", ErrUsage, err)
	}
	if c.oidcSecret = strings.TrimSpace(string(b)); c.oidcSecret == "" {
		return fmt.Errorf("%w: --oidc-client-secret-file %s is empty", ErrUsage, c.oidcSecretFile)
	}
	return nil
}

// loopbackHost reports whether host (no port) is localhost or a loopback
// address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkIssuer accepts an issuer URL: https, or http on loopback (a
// provider on this machine); no query or fragment.
func checkIssuer(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return errors.New("want a URL like https://login.example.com/realms/ops")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return errors.New("a plain http:// issuer is accepted on loopback only: its keys and tokens would travel unprotected; use https")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("the scheme must be https")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return errors.New("an issuer has no query, fragment or user")
	}
	return nil
}

// checkPublicURL accepts the address browsers reach the UI at: https (or
// http on loopback), a host, no path (the base path is added).
func checkPublicURL(s string) error {
	if err := checkIssuer(s); err != nil {
		return err
	}
	u, _ := url.Parse(s)
	if u.Path != "" && u.Path != "/" {
		return errors.New("give the scheme and host only (https://forms.example.com): --base-path adds the path")
	}
	return nil
}

// httpsPublic reports whether --public-url says browsers reach the UI
// over TLS (a proxy terminating it, when the UI itself serves plain
// HTTP): its cookies are then Secure, or one sent over http:// by a
// network attacker's redirect would carry the session in the clear.
func (c *oidcConfig) httpsPublic() bool {
	return c.oidcIssuer != "" && strings.HasPrefix(strings.ToLower(c.publicURL), "https://")
}

// oidc is the web side of the configuration, nil when no provider is set.
func (c *oidcConfig) oidc() *web.OIDC {
	if c.oidcIssuer == "" {
		return nil
	}
	claims := []string{c.oidcNameClaim}
	if c.oidcNameClaim != "email" {
		claims = append(claims, "email")
	}
	return &web.OIDC{Issuer: c.oidcIssuer, ClientID: c.oidcClientID, ClientSecret: c.oidcSecret,
		PublicURL: c.publicURL, NameClaims: claims, Timeout: c.oidcTimeout, RolesClaim: c.oidcRolesClaim, Roles: c.roles,
		Teams: c.teams, Recheck: c.oidcRecheck}
}
