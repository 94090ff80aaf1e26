package form

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aepforms/aepforms/internal/aep"
)

// FuzzParseAnswer posts arbitrary form bodies to the every-type form (and
// to a permission request): ParseAnswer never panics, and an answer it
// lets through passes the agent's rule and the UI's checks, names only
// declared fields, and survives the trip through JSON unchanged.
func FuzzParseAnswer(f *testing.F) {
	f.Add(answerValidPost().Encode())
	f.Add("")
	f.Add("f0=a&f2=1e400&f5=1&f7=0")
	f.Add("f0=%20&f2=NaN&f5=other&f6=0&f6-other=x&f7=9&f8=other")
	f.Add("f0=x&f2=2.5&f4=on&f5=2&f6-other=MariaDB&f7=2&f7=0&f7=2&f8-other=urgent&option=1&text=t")
	f.Add("f0=x&f2=3&f5=1&f6=other&f6-other=%20sqlite%20&f7=0&f8=1&f8-other=beta")
	f.Add("f0=x&f2=3&f5=1&f6=1&f6-other=pg&f7=0&f8-other=A")
	f.Add("f0=%ff&f2=0x10&f5=01&f7=-1&f9=z&option=0")
	f.Add("f0=ok&f2=2500&f5=0&f7=1&f8=0&f8=1&f8=other&f8-other=b")
	f.Add("text=0")       // a note alone, on the permission
	f.Add("text=%20Deny") // a note alone naming an option: refused
	f.Add("option=1&text=because")
	form := answerEveryType()
	permission := aep.Request{Kind: aep.KindPermission, Prompt: "Allow?", Options: []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}}
	f.Fuzz(func(t *testing.T, body string) {
		post, _ := url.ParseQuery(body) // a malformed body still yields what parsed, as net/http does
		ans, problems := ParseAnswer(form, post)
		for _, p := range problems {
			if p.Message == "" {
				t.Fatalf("problem without a message: %+v", p)
			}
		}
		if len(problems) == 0 {
			checkFuzzedValues(t, form.Fields, ans.Values)
		} else if ans.Values != nil || ans.Option != "" || ans.Text != nil {
			t.Fatalf("refused post gave an answer: %#v", ans)
		}

		ans, problems = ParseAnswer(permission, post)
		if len(problems) > 0 {
			return
		}
		switch {
		case ans.Option == "allow" || ans.Option == "deny":
		case ans.Option == "" && ans.Text != nil && strings.TrimSpace(*ans.Text) != "":
			// A note sent alone (the agent may refuse it): never one
			// that names an option, which the agent would apply as it.
			note := strings.ToLower(strings.TrimSpace(*ans.Text))
			for _, o := range permission.Options {
				if note == strings.ToLower(o.ID) || note == strings.ToLower(o.Label) {
					t.Fatalf("a note alone %q names option %q", *ans.Text, o.ID)
				}
			}
		default:
			t.Fatalf("permission answer %#v is neither an option nor a note", ans)
		}
	})
}

func checkFuzzedValues(t *testing.T, fields []aep.FieldSpec, v aep.Values) {
	t.Helper()
	if ps := aep.ValidateValues(fields, v); len(ps) > 0 {
		t.Fatalf("accepted values %#v refused by ValidateValues: %v", v, ps)
	}
	if ps := aep.CheckValues(fields, v); len(ps) > 0 {
		t.Fatalf("accepted values %#v refused by CheckValues: %v", v, ps)
	}
	declared := map[string]bool{}
	for _, f := range fields {
		declared[f.ID] = true
	}
	for k := range v {
		if !declared[k] {
			t.Fatalf("values carry undeclared key %q", k)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("values do not marshal: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var back aep.Values
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("values do not decode: %v", err)
	}
	if !reflect.DeepEqual(v, back) {
		t.Fatalf("values change through JSON: %#v became %#v", v, back)
	}
}
