package view

// SignInView is the operator sign-in page.
type SignInView struct {
	Page    PageView // the shell: title, base path, asset URLs (no push)
	Action  string   // POST URL: {base}/signin
	Problem string   // why the last attempt was refused; "" on first show
	Name    string   // the operator name typed last time, kept
	// NameRequired is true with named operators (--operators-file): each
	// signs in with their own name and secret, so the name is required
	// and authenticated, not a label.
	NameRequired bool
	// ProviderURL starts a sign-in with the identity provider (OIDC) named
	// Provider (its host); the page then offers that instead of the form.
	ProviderURL, Provider string
	// Window is set when the page is inside another site's frame (the
	// panel in a console) and the provider signs in: providers refuse to
	// be framed, so the sign-in opens in a window of its own and the frame
	// picks the session up from it (nil otherwise).
	Window *SignInWindow
	// PopupWaitMS is how long, in ms, the sign-in window a panel opened
	// waits for the panel to give it its hand-off before it says no panel
	// did (data-wait-ms; Config.SignInWindowWait).
	PopupWaitMS int64
}

// SignInWindow is the frame's way to sign in through a window of its
// own: it starts a hand-off (HandoffURL, a POST), opens PopupURL, and
// redeems the hand-off (RedeemURL, a POST) once the window has signed
// in. OpenURL is the page in its own tab, the way on without JavaScript
// or with the window blocked.
type SignInWindow struct {
	HandoffURL, PopupURL, RedeemURL, OpenURL string
	// PollMS is how often, in ms, the frame checks whether the window
	// closed (data-poll-ms); MaxAge how long a hand-off lasts, in words.
	PollMS int64
	MaxAge string
}

// Sign-in form control names and ids.
const (
	SignInErrorsID = "signin-errors"
)

// SignIn builds the sign-in page under basePath; problem is the message
// of a refused attempt ("" when none), name the name to keep in the form.
func SignIn(basePath string, assets Assets, problem, name string) SignInView {
	base := root(basePath)
	title := "Sign in · aepforms"
	if problem != "" {
		title = "Error: " + title
	}
	focus := ""
	if problem != "" {
		focus = SignInErrorsID
	}
	return SignInView{
		Page: PageView{
			FocusErrors: focus,
			Title:       title,
			Base:        base,
			HomeURL:     base + "/",
			CSSURL:      assets.CSS,
			JSURL:       assets.JS,
			IconURL:     assets.Icon,
			Relay:       RelayView{Connected: true},
		},
		Action:  base + "/signin",
		Problem: problem,
		Name:    Text(name),
	}
}
