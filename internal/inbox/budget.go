package inbox

import "github.com/aepforms/aepforms/internal/aep"

// Whether a request is too big to offer as a form is the domain's rule,
// not the view's: it decides whether an answer may be sent from here
// (Card.CanAnswer says ErrTooManyControls), so the answer path and the
// page agree. A large prompt is not part of it: the view shows a prompt
// in part with the rest a click away, and the request stays answerable.

// Controls is how many form controls request req needs: the choices of
// every select field, plus one control per other field and one per
// option. Options.MaxControls bounds it.
func Controls(req aep.Request) int {
	n := len(req.Options)
	for _, f := range req.Fields {
		if f.Type == aep.FieldSelect {
			n += len(f.Choices)
		} else {
			n++
		}
	}
	return n
}
