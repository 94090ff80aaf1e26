package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aepforms/aepforms/web"
)

// declareOperator declares operator add's flags: the file, the role and
// the teams.
func declareOperator(fs *flag.FlagSet, env Env) (file, role, teams *string) {
	return fs.String("operators-file", env("AEPFORMS_OPERATORS_FILE"), "the operators file, made mode 0600 if it does not exist (env AEPFORMS_OPERATORS_FILE)"),
		fs.String("role", "answerer", "what the operator may do: viewer (reads, answers nothing), answerer (answers, pauses rules) or admin (also makes, resumes, widens and deletes rules)"),
		fs.String("team", "", "the teams the operator is in, comma-separated (oncall,leads): the questions a routes file (serve --routes) sends a team notify its operators")
}

// runOperator is `aepforms operator add NAME`: a named operator with a
// fresh secret, appended to the operators file (made mode 0600); the
// secret is printed once, never stored.
func runOperator(_ context.Context, args []string, env Env, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aepforms operator add NAME [--role viewer|answerer|admin] [--team TEAM[,TEAM]] [--operators-file PATH]\n\n"+
			"Adds a named operator to the operators file with a fresh secret, printed once:\n"+
			"give it to that operator. serve --operators-file PATH then lets each operator\n"+
			"sign in with their own name and secret.\n\n")
		fs.PrintDefaults()
	}
	file, roleName, teamList := declareOperator(fs, env)
	if len(args) == 0 || args[0] != "add" {
		fs.Usage()
		return ErrUsage
	}
	// Flags may come before or after the name.
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return operatorUsage(stderr, "add needs the operator's NAME")
	}
	name := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return operatorUsage(stderr, fmt.Sprintf("unexpected argument %q (a name with spaces goes in quotes)", fs.Arg(0)))
	}
	if *file == "" {
		return operatorUsage(stderr, "say which file: --operators-file PATH or AEPFORMS_OPERATORS_FILE")
	}
	if !web.ValidOperatorName(name) {
		return operatorUsage(stderr, fmt.Sprintf("%q cannot be an operator's name: at most 80 bytes of printable text, not starting with # or rule:", name))
	}
	role, ok := web.ParseRole(*roleName)
	if !ok {
		return operatorUsage(stderr, fmt.Sprintf("--role %q: want viewer, answerer or admin", *roleName))
	}
	var teams []string
	if *teamList != "" {
		var err error
		if teams, err = web.ParseTeams(*teamList); err != nil {
			return operatorUsage(stderr, "--team: "+err.Error())
		}
	}
	secret, err := addOperator(*file, web.Operator{Name: name, Role: role, Teams: teams})
	if err != nil {
		return err
	}
	what := string(role)
	if len(teams) > 0 {
		what += ", team " + strings.Join(teams, ", ")
	}
	fmt.Fprintf(stdout, "Added operator %q (%s) to %s. Their secret, shown this once (give it to them; it is not stored):\n\n  %s\n", name, what, *file, secret)
	return nil
}

// operatorUsage prints a command-line problem and returns ErrUsage.
func operatorUsage(stderr io.Writer, msg string) error {
	fmt.Fprintf(stderr, "aepforms operator: %s\n", msg)
	return ErrUsage
}

// addOperator appends name with the hash of a fresh secret (256 random
// bits, hex) to the operators file, creating it (and its directory)
// readable only by the user, and returns the secret. A name already in
// the file is refused.
func addOperator(path string, op web.Operator) (string, error) {
	name := op.Name
	ops, old, err := readOperatorsFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, op := range ops {
		if op.Name == name {
			return "", fmt.Errorf("%s already names an operator %q: remove that line first to give them a new secret", path, name)
		}
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	secret := hex.EncodeToString(raw)
	hash, err := web.HashSecret(secret)
	if err != nil {
		return "", fmt.Errorf("hash the secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("operators file directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("open operators file: %w", err)
	}
	op.Hash = hash
	line := web.OperatorLine(op) + "\n"
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return "", fmt.Errorf("write operators file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write operators file: %w", err)
	}
	return secret, nil
}

// readOperatorsFile reads and parses the operators file, refusing one
// that others can read (it holds the hashes of every operator's secret).
func readOperatorsFile(path string) ([]web.Operator, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("operators file %s is readable by others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	ops, err := web.ParseOperators(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ops, b, nil
}

// loadOperators reads the operators file serve is given: it must exist
// and name at least one operator.
func loadOperators(path string) ([]web.Operator, error) {
	ops, _, err := readOperatorsFile(path)
	if err != nil {
		return nil, fmt.Errorf("--operators-file: %w", err)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("--operators-file %s names no operator: add one with aepforms operator add NAME --operators-file %s", path, path)
	}
	return ops, nil
}
