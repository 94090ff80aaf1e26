package form

import (
	"net/url"
	"testing"
)

// BenchmarkParseAnswer maps a full post of the every-type form (every field
// answered, Other texts included) and a refused one.
func BenchmarkParseAnswer(b *testing.B) {
	req := answerEveryType()
	full := answerPost(map[string][]string{
		"f1": {"Roll out behind the flag; page if error rate > 1%"}, "f3": {"1250.75"}, "f4": {"on"},
		"f6": {"other"}, "f6-other": {"MariaDB"}, "f7": {"2", "0", "1"}, "f8": {"1", "other"}, "f8-other": {"urgent"},
	})
	refused := url.Values{"f2": {"1e400"}, "f5": {"9"}, "f6": {"0"}, "f6-other": {"MariaDB"}}
	for _, bc := range []struct {
		name     string
		form     url.Values
		problems bool
	}{{"accepted", full, false}, {"refused", refused, true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, problems := ParseAnswer(req, bc.form); (len(problems) > 0) != bc.problems {
					b.Fatalf("problems: got %v, want some: %v", problems, bc.problems)
				}
			}
		})
	}
}
