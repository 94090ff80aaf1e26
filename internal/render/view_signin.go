package render

import "github.com/aepforms/aepforms/static"

// SignInView is the operator sign-in page.
type SignInView struct {
	Action string // {base}/signin
	CSSURL string
	Error  string // why the last attempt failed, "" on first view
	Name   string // the name the operator typed, kept on a failed attempt
}

// SignIn builds the sign-in page's view.
func SignIn(basePath, errMsg, name string) SignInView {
	base := cleanBase(basePath)
	return SignInView{Action: base + "/signin", CSSURL: base + "/static/app.css?v=" + static.Hash(), Error: errMsg, Name: name}
}
