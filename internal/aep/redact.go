package aep

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// Replacement markers of the redaction pipeline.
const (
	RedactedSecret = "[REDACTED:secret]"
	RedactedPII    = "[REDACTED:pii]"
)

// RedactOptions configures a Redactor. The zero value is the default
// pipeline: no configured secrets, no configured home, PII redaction on.
type RedactOptions struct {
	// SecretValues are literal values the operator lists as secret (rule b),
	// e.g. the values of secret environment variables. Empty ones are ignored.
	SecretValues []string
	// Home is the user's home directory, replaced by "~" (rule c). Any
	// /home/<user>, /Users/<user> and C:\Users\<user> prefix is replaced too.
	Home string
	// KeepPII turns rule d (emails and phone numbers) off.
	KeepPII bool
}

// Redactor applies the AEP-0003 §9.4 redaction pipeline, in order: (a)
// secrets and credentials, (b) configured secret values, (c) home paths,
// (d) PII. It redacts more than the normative floor (well-known token
// shapes, any user's home). Safe for concurrent use.
type Redactor struct {
	secrets []string // longest first
	home    string
	pii     bool
}

// NewRedactor returns a Redactor for opts.
func NewRedactor(opts RedactOptions) *Redactor {
	r := &Redactor{home: strings.TrimRight(opts.Home, "/"), pii: !opts.KeepPII}
	for _, s := range opts.SecretValues {
		if s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return r
}

var defaultRedactor = NewRedactor(RedactOptions{})

// Redact runs the default pipeline over free text: what may be published at
// capture redacted. Out of scope (as in the corpus): encoded secrets,
// homoglyph key names, prose-obfuscated PII.
func Redact(s string) string { return defaultRedactor.Text(s) }

// RedactValue runs the default pipeline over a decoded JSON value (see
// (*Redactor).Value).
func RedactValue(v any) any { return defaultRedactor.Value(v) }

var (
	rePEM          = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*-----[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\z)`)
	reAuthHeader   = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|digest|token)\s+)?[^\s"',;]+`)
	reBearer       = regexp.MustCompile(`(?i)\bbearer(\s+)([A-Za-z0-9\-._~+/]+=*)`)
	reAssign       = regexp.MustCompile(`(?i)(password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|token)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|\S+)`)
	reJWT          = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)
	reTokenShapes  = regexp.MustCompile(`\b(?:(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}|[rs]k_(?:live|test)_[A-Za-z0-9]{10,}|AIza[0-9A-Za-z_-]{30,})`)
	reHomePath     = regexp.MustCompile(`(?:/home|/Users)/[^/\s"'` + "`" + `]+|(?i:[a-z]:\\Users\\[^\\\s"']+)`)
	reEmail        = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	rePhone        = regexp.MustCompile(`(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]\d{3,4}|\+\d{8,15}`)
	credentialKeys = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey", "authorization", "credential", "credentials", "cookie"}
)

// Text redacts free text.
func (r *Redactor) Text(s string) string {
	// (a) secrets and credentials.
	s = rePEM.ReplaceAllString(s, RedactedSecret)
	s = reAuthHeader.ReplaceAllString(s, "${1}${2}"+RedactedSecret)
	s = reBearer.ReplaceAllStringFunc(s, func(m string) string {
		sub := reBearer.FindStringSubmatch(m)
		if !looksLikeToken(sub[2]) {
			return m
		}
		return m[:len(m)-len(sub[2])] + RedactedSecret
	})
	s = reAssign.ReplaceAllStringFunc(s, func(m string) string {
		sub := reAssign.FindStringSubmatch(m)
		if strings.Contains(sub[3], RedactedSecret) {
			return m
		}
		if q := sub[3][0]; q == '"' || q == '\'' {
			return sub[1] + sub[2] + string(q) + RedactedSecret + string(q)
		}
		return sub[1] + sub[2] + RedactedSecret
	})
	s = reJWT.ReplaceAllString(s, RedactedSecret)
	s = reTokenShapes.ReplaceAllString(s, RedactedSecret)
	// (b) configured secret values.
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, RedactedSecret)
	}
	// (c) home paths.
	if r.home != "" {
		s = replacePathPrefix(s, r.home)
	}
	s = replaceStandalone(s, reHomePath, "~", func(prev, _ byte) bool { return !isPathChar(prev) }, nil)
	// (d) PII.
	if r.pii {
		s = reEmail.ReplaceAllString(s, RedactedPII)
		s = replaceStandalone(s, rePhone, RedactedPII, func(prev, _ byte) bool { return !isWordOrDot(prev) }, phoneEnds)
	}
	return s
}

// Value redacts a decoded JSON value: every string goes through Text, and
// a string under a credential-named key (token, password, api_key,
// authorization, ..., in any case, with - or _) is replaced whole. Object
// keys are structural and kept; non-string scalars are untouched. It
// returns a new value and does not modify v.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.Text(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			if _, isStr := el.(string); isStr && credentialKey(k) {
				out[k] = RedactedSecret
				continue
			}
			out[k] = r.Value(el)
		}
		return out
	case Values:
		return Values(r.Value(map[string]any(x)).(map[string]any))
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = r.Value(el)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, el := range x {
			out[i] = r.Text(el)
		}
		return out
	}
	return v
}

// credentialKey reports whether an object key names a credential.
func credentialKey(k string) bool {
	n := strings.Map(func(c rune) rune {
		switch c {
		case '-', '_', '.', ' ':
			return -1
		}
		return c
	}, strings.ToLower(k))
	for _, c := range credentialKeys {
		if strings.HasSuffix(n, c) {
			return true
		}
	}
	return false
}

// looksLikeToken tells a bearer token from prose ("the bearer of good
// news"): at least 8 characters with a digit or token punctuation.
func looksLikeToken(s string) bool {
	if len(s) < 8 {
		return false
	}
	return strings.ContainsAny(s, "0123456789-._~+/=")
}

// replacePathPrefix replaces home (and home/...) with ~ where it starts a path.
func replacePathPrefix(s, home string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, home)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(home)
		if end == len(s) || s[end] == '/' || !isPathChar(s[end]) {
			b.WriteString(s[:i])
			b.WriteString("~")
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func isPathChar(c byte) bool {
	return c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// replaceStandalone replaces the matches of re whose neighbours pass:
// before(prev, first) sees the byte before the match (0 at the start) and
// after(s, end) the text after it; nil accepts.
func replaceStandalone(s string, re *regexp.Regexp, repl string, before func(prev, first byte) bool, after func(rest string) bool) string {
	idx := re.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		start, end := m[0], m[1]
		var prev byte
		if start > 0 {
			prev = s[start-1]
		}
		if (before != nil && start > 0 && !before(prev, s[start])) || (after != nil && !after(s[end:])) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(repl)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// phoneEnds reports whether a phone match ends the number: not followed by
// a letter or digit, nor by a dot and a digit (a version, an address).
func phoneEnds(rest string) bool {
	if rest == "" {
		return true
	}
	if isPathChar(rest[0]) && rest[0] != '.' && rest[0] != '-' {
		return false
	}
	return !(len(rest) > 1 && (rest[0] == '.' || rest[0] == '-') && isDigit(rest[1]))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isWordOrDot: letters, digits, '_' and '.'.
func isWordOrDot(c byte) bool { return isPathChar(c) && c != '-' }
