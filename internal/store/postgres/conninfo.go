package postgres

import (
	"strings"
)

// keywords are libpq's connection parameter names: a --db made of
// key=value words with any of them is a PostgreSQL connection string,
// never a SQLite file name.
var keywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "require_auth": true, "channel_binding": true, "connect_timeout": true,
	"client_encoding": true, "options": true, "application_name": true, "fallback_application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "replication": true, "gssencmode": true, "sslmode": true, "requiressl": true,
	"sslnegotiation": true, "sslcompression": true, "sslcert": true, "sslkey": true, "sslpassword": true,
	"sslcertmode": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"krbsrvname": true, "gsslib": true, "gssdelegation": true, "service": true,
	"target_session_attrs": true, "load_balance_hosts": true,
}

// IsConnString reports whether db names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or a libpq key=value connection
// string (host=… dbname=…, any word of it starting with a libpq
// parameter name and "="). Anything else is a SQLite file name; a file
// whose name has such a word can be given as ./name.
func IsConnString(db string) bool {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return true
	}
	for _, word := range strings.Fields(db) {
		if k, _, ok := strings.Cut(word, "="); ok && keywords[strings.TrimSpace(k)] {
			return true
		}
	}
	// "host = x": libpq allows spaces around "=".
	fields := strings.Fields(db)
	for i := 0; i+1 < len(fields); i++ {
		if keywords[fields[i]] && strings.HasPrefix(fields[i+1], "=") {
			return true
		}
	}
	return false
}

// redactKeywords is the key=value connection string s with the values
// of password and sslpassword replaced by "xxxxx", read as libpq reads
// it (values bare or single-quoted, backslash escapes); ok is false when
// it does not read as one, and then nothing of it may be shown.
func redactKeywords(s string) (string, bool) {
	var out []string
	rest := strings.TrimSpace(s)
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return "", false
		}
		key := strings.TrimSpace(rest[:eq])
		if key == "" || strings.ContainsAny(key, " \t\n\r'\\") {
			return "", false
		}
		rest = strings.TrimLeft(rest[eq+1:], " \t\n\r")
		value, n, ok := readValue(rest)
		if !ok {
			return "", false
		}
		rest = strings.TrimLeft(rest[n:], " \t\n\r")
		if key == "password" || key == "sslpassword" {
			value = "xxxxx"
		} else {
			value = quoteValue(value)
		}
		out = append(out, key+"="+value)
	}
	return strings.Join(out, " "), len(out) > 0
}

// readValue reads one value from the start of s: its text, how many
// bytes of s it took, and whether it was well formed.
func readValue(s string) (string, int, bool) {
	var b strings.Builder
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 >= len(s) {
					return "", 0, false
				}
				i++
				b.WriteByte(s[i])
			case '\'':
				return b.String(), i + 1, true
			default:
				b.WriteByte(s[i])
			}
		}
		return "", 0, false // no closing quote
	}
	i := 0
	for ; i < len(s) && !strings.ContainsRune(" \t\n\r", rune(s[i])); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), i, true
}

// quoteValue is value as a connection string writes it.
func quoteValue(value string) string {
	if value != "" && !strings.ContainsAny(value, " \t\n\r'\\") {
		return value
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'"
}
