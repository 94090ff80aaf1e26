package view

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/aepforms/aepforms/internal/render/form"
)

// GoneView is the page a form post to a question the inbox no longer
// holds is answered with (404, without the script): the reason in the
// operator's words, what they typed (so nothing they wrote is lost), and
// the way back to the inbox.
type GoneView struct {
	Page PageView
	// Heading is the page's heading: what happened, in a few words.
	Heading string
	// Message says what happened and that nothing was sent.
	Message string
	// Typed is the text the operator typed into the form, in the order
	// of the form's fields: free text, Other text and the values of text
	// and number fields. Choice indexes, ticks and the form token are
	// left out (without the question they mean nothing).
	Typed []string
	// InboxURL is the inbox (or the panel the post came from).
	InboxURL string
}

// typedName is a form name whose value may be text the operator typed:
// f{i}, f{i}-other or text.
var typedName = regexp.MustCompile(`^(f([0-9]+)(-other)?|` + regexp.QuoteMeta(form.NameText) + `)$`)

// notTyped is a value a control sends on its own: a choice index, a
// ticked box, the Other choice.
var notTyped = regexp.MustCompile(`^([0-9]+|on|other)$`)

// Gone builds the page for a post to a question the inbox does not hold.
// panel is true when the post came from the panel.
func Gone(basePath string, assets Assets, post url.Values, panel bool, themeName string) GoneView {
	si := SignIn(basePath, assets, "", "")
	p := si.Page
	p.Title = "Question no longer open · aepforms"
	p.Theme = theme(themeName)
	home := p.HomeURL
	if panel {
		home = p.Base + "/panel"
	}
	return GoneView{
		Page:     p,
		Heading:  words.refusalPage["gone"],
		Message:  RefusalGone.Message,
		Typed:    typedText(post),
		InboxURL: home,
	}
}

// typedText is what the operator typed into the posted form, in field
// order (text first, then f0, f0-other, f1, ...).
func typedText(post url.Values) []string {
	type entry struct {
		field int
		other bool
		vals  []string
	}
	var es []entry
	for name, vals := range post {
		m := typedName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		e := entry{field: -1, other: m[3] != "", vals: vals}
		if m[2] != "" {
			e.field = atoiSmall(m[2])
		}
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].field != es[j].field {
			return es[i].field < es[j].field
		}
		return !es[i].other && es[j].other
	})
	var out []string
	for _, e := range es {
		for _, v := range e.vals {
			if strings.TrimSpace(v) == "" || (!e.other && e.field >= 0 && notTyped.MatchString(v)) {
				continue
			}
			out = append(out, Text(v))
		}
	}
	return out
}

// atoiSmall reads a field index (digits only, as typedName matched);
// past a few digits it saturates, which only affects the order.
func atoiSmall(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
		if n > 1<<20 {
			return 1 << 20
		}
	}
	return n
}

// Unread builds the page for a post that could not be read at all (too
// large, or malformed): nothing was sent, and what was typed is still in
// the browser's page (its Back button returns to it).
func Unread(basePath string, assets Assets, panel bool, themeName string, tooLarge bool) GoneView {
	v := Gone(basePath, assets, nil, panel, themeName)
	key := "unread"
	if tooLarge {
		key = "too-large"
	}
	v.Page.Title = words.refusalPage[key+"-title"] + " · aepforms"
	v.Heading = words.refusalPage[key+"-title"]
	v.Message = words.refusalPage[key]
	return v
}

// GoneOpened builds the page for a link to a question (its own page, its
// whole prompt) the server no longer holds: nothing was posted, so it
// only says so and leads back to the inbox.
func GoneOpened(basePath string, assets Assets, themeName string) GoneView {
	v := Gone(basePath, assets, nil, false, themeName)
	v.Message = words.refusalPage["gone-open"]
	return v
}

// NotFound builds the page for an address the UI does not serve.
func NotFound(basePath string, assets Assets, themeName string) GoneView {
	v := Gone(basePath, assets, nil, false, themeName)
	v.Page.Title = words.refusalPage["not-found-title"] + " · aepforms"
	v.Heading = words.refusalPage["not-found-title"]
	v.Message = words.refusalPage["not-found"]
	return v
}
