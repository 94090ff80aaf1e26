package web

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aepforms/aepforms/internal/routes"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Operator is one named operator (a line of an operators file): the name
// recorded as who answered and the hash of that operator's own secret,
// bcrypt ("$2a$…", "$2b$…") or argon2id in its PHC form
// ("$argon2id$v=19$m=…,t=…,p=…$salt$key").
type Operator struct {
	Name string
	Hash string
	// Role is what the operator may do; "" is RoleAnswerer.
	Role Role
	// Teams are the teams the operator is in (team=oncall,leads), whose
	// questions notify them; none: no team.
	Teams []string
}

// role is the operator's role, RoleAnswerer when the line names none.
func (o Operator) role() Role {
	if o.Role == "" {
		return RoleAnswerer
	}
	return o.Role
}

// ErrOperatorsFile marks a malformed operators file.
var ErrOperatorsFile = errors.New("web: operators file")

// ParseOperators reads an operators file: one operator a line, the name,
// an optional role (role=viewer, role=answerer, role=admin; answerer when
// none), optional teams (team=oncall,leads) and then the hash, which is the line's last field (so a name may
// hold spaces). Blank lines and lines starting with # are skipped. A name is
// at most 80 bytes of printable text, once per file.
func ParseOperators(r io.Reader) ([]Operator, error) {
	var ops []Operator
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexAny(line, " \t")
		if i < 0 {
			return nil, fmt.Errorf("%w: line %d: want a name and a hash", ErrOperatorsFile, n)
		}
		rest, hash := line[:i], line[i+1:]
		role, teams, rest, err := cutAttrs(rest)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrOperatorsFile, n, err)
		}
		name := operatorName(rest)
		switch {
		case name == "":
			return nil, fmt.Errorf("%w: line %d: the name must be printable text of at most %d bytes", ErrOperatorsFile, n, maxOperatorName)
		case !knownHash(hash):
			return nil, fmt.Errorf("%w: line %d: the hash is neither bcrypt nor argon2id", ErrOperatorsFile, n)
		case seen[name]:
			return nil, fmt.Errorf("%w: line %d: %q is named twice", ErrOperatorsFile, n, name)
		}
		seen[name] = true
		ops = append(ops, Operator{Name: name, Hash: hash, Role: role, Teams: teams})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOperatorsFile, err)
	}
	return ops, nil
}

// cutAttrs takes the role=ROLE and team=TEAM[,TEAM] fields, in either
// order, off the end of a line's name part ("" and none when it has
// none).
func cutAttrs(rest string) (role Role, teams []string, name string, err error) {
	rest = strings.TrimSpace(rest)
	for {
		i := strings.LastIndexAny(rest, " \t")
		if i < 0 {
			return role, teams, rest, nil
		}
		field := rest[i+1:]
		if v, ok := strings.CutPrefix(field, "role="); ok && role == "" {
			if role, ok = ParseRole(v); !ok {
				return "", nil, rest, fmt.Errorf("%q is no role: want role=viewer, role=answerer or role=admin", field)
			}
		} else if v, ok := strings.CutPrefix(field, "team="); ok && teams == nil {
			if teams, err = ParseTeams(v); err != nil {
				return "", nil, rest, err
			}
		} else {
			return role, teams, rest, nil
		}
		rest = strings.TrimSpace(rest[:i])
	}
}

// ParseTeams reads a comma-separated list of team names (oncall,leads):
// each 1 to 64 letters, digits, '-', '_' or '.', once.
func ParseTeams(s string) ([]string, error) {
	var teams []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if !routes.ValidTeamName(t) {
			return nil, fmt.Errorf("team %q: a team's name is 1 to 64 letters, digits, '-', '_' or '.'", t)
		}
		if !slices.Contains(teams, t) {
			teams = append(teams, t)
		}
	}
	return teams, nil
}

// OperatorLine is an operators file's line for op.
func OperatorLine(op Operator) string {
	line := op.Name
	if op.Role != "" && op.Role != RoleAnswerer {
		line += " role=" + string(op.Role)
	}
	if len(op.Teams) > 0 {
		line += " team=" + strings.Join(op.Teams, ",")
	}
	return line + " " + op.Hash
}

// ValidOperatorName reports whether name can be an operator's name: as
// the sign-in form takes it (operatorName) and not starting a comment.
func ValidOperatorName(name string) bool {
	return name != "" && operatorName(name) == name && !strings.HasPrefix(name, "#")
}

// HashSecret returns the bcrypt hash (default cost) of an operator's
// secret, as an operators file keeps it.
func HashSecret(secret string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.DefaultCost)
	return string(h), err
}

// knownHash reports whether hash has a form checkHash reads.
func knownHash(hash string) bool {
	if strings.HasPrefix(hash, "$argon2id$") {
		_, _, _, ok := parseArgon2id(hash)
		return ok
	}
	_, err := bcrypt.Cost([]byte(hash))
	return err == nil
}

// checkHash reports whether secret is the one hash was made from.
func checkHash(hash, secret string) bool {
	if strings.HasPrefix(hash, "$argon2id$") {
		p, salt, key, ok := parseArgon2id(hash)
		if !ok {
			return false
		}
		got := argon2.IDKey([]byte(secret), salt, p.t, p.m, p.p, uint32(len(key)))
		return subtle.ConstantTimeCompare(got, key) == 1
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(secret)) == nil
}

type argon2Params struct {
	m, t uint32
	p    uint8
}

// parseArgon2id reads "$argon2id$v=19$m=65536,t=3,p=4$salt$key" (salt and
// key unpadded standard base64).
func parseArgon2id(hash string) (argon2Params, []byte, []byte, bool) {
	var p argon2Params
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" {
		return p, nil, nil, false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.m, &p.t, &p.p); err != nil || p.m == 0 || p.t == 0 || p.p == 0 {
		return p, nil, nil, false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 {
		return p, nil, nil, false
	}
	return p, salt, key, true
}

// operatorBook is the named operators, by name, with the key each one's
// sessions are signed with (derived from the hash, so an operator whose
// secret changes is signed out, and no one else). Hash checks are slow
// on purpose; the last secret each operator proved is remembered (as a
// SHA-256) so a script's Bearer requests are not checked anew each time.
type operatorBook struct {
	ops    map[string]Operator
	keys   map[string][]byte
	mu     sync.Mutex
	proven map[string][32]byte // guarded by mu
	dummy  string              // a hash to check unknown names against, so they take as long
}

func newOperatorBook(ops []Operator) *operatorBook {
	b := &operatorBook{ops: map[string]Operator{}, keys: map[string][]byte{}, proven: map[string][32]byte{}}
	for _, op := range ops {
		b.ops[op.Name] = op
		b.keys[op.Name] = sessionKey(op.Hash)
		if b.dummy == "" {
			b.dummy = op.Hash
		}
	}
	return b
}

// OperatorList is the named operators as they are now: serve reads the
// operators file again when it changes and sets the new list here
// (Config.OperatorList), and every sign-in and session check reads it,
// so a changed secret or role ends the sessions of the old one at their
// next check (--session-recheck for an open page's stream), and a new
// operator signs in without a restart.
type OperatorList struct{ p atomic.Pointer[[]Operator] }

// NewOperatorList is a list holding ops.
func NewOperatorList(ops []Operator) *OperatorList {
	l := &OperatorList{}
	l.Set(ops)
	return l
}

// Set makes ops the named operators.
func (l *OperatorList) Set(ops []Operator) {
	ops = slices.Clone(ops)
	l.p.Store(&ops)
}

// Get is the named operators now.
func (l *OperatorList) Get() []Operator { return *l.p.Load() }

// holds reports whether name is a named operator's, whatever its case
// (History shows "Ann" and "ann" as one person).
func (b *operatorBook) holds(name string) bool {
	for n := range b.ops {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// check reports whether secret is operator name's own.
func (b *operatorBook) check(name, secret string) bool {
	op, ok := b.ops[name]
	if !ok {
		checkHash(b.dummy, "\x00"+secret) // the same time as a known name
		return false
	}
	sum := sha256.Sum256([]byte(secret))
	b.mu.Lock()
	prev, seen := b.proven[name]
	b.mu.Unlock()
	if seen && subtle.ConstantTimeCompare(prev[:], sum[:]) == 1 {
		return true
	}
	if !checkHash(op.Hash, secret) {
		return false
	}
	b.mu.Lock()
	b.proven[name] = sum
	b.mu.Unlock()
	return true
}
