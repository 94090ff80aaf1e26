package app

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aepforms/aepforms/internal/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateFlagsDoc = flag.Bool("update", false, "rewrite docs/OPERATIONS.md's flags reference from the subcommands' flag sets")

// operationsDoc is the file whose flags reference is generated.
const operationsDoc = "../../docs/OPERATIONS.md"

// docEnv is the environment the reference is generated in: no variable
// set but the two XDG directories, named as themselves, so the defaults
// read "$XDG_STATE_HOME/aepforms/aepforms.db" on every machine.
func docEnv(k string) string {
	switch k {
	case "XDG_CONFIG_HOME", "XDG_STATE_HOME":
		return "$" + k
	}
	return ""
}

// docCommand is a subcommand documented in the reference: the flag set
// its -h prints and the arguments that print it.
type docCommand struct {
	name string
	fs   *flag.FlagSet
	help []string
}

// docCommands builds every subcommand's flag set with the functions the
// subcommands themselves declare their flags with.
func docCommands() []docCommand {
	serve := newServeFlags(docEnv).fs
	relay := flag.NewFlagSet("relay", flag.ContinueOnError)
	var rs relaySettings
	rs.register(relay)
	demo := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	declareDemoAgent(demo, agent.DefaultConfig())
	op := flag.NewFlagSet("operator", flag.ContinueOnError)
	declareOperator(op, docEnv)
	return []docCommand{
		{"serve", serve, []string{"serve", "-h"}},
		{"relay", relay, []string{"relay", "-h"}},
		{"demo-agent", demo, []string{"demo-agent", "-h"}},
		{"operator add", op, []string{"operator", "add", "-h"}},
	}
}

// envOfUsage finds the "(env NAME)" or "(env NAME, comma-separated)" a
// usage names its environment variable with.
var envOfUsage = regexp.MustCompile(` ?\(env ([A-Z0-9_]+)(, comma-separated)?\)`)

// splitUsage returns a usage without its env mention, and the variable
// (", comma-separated" kept with it).
func splitUsage(usage string) (meaning, env string) {
	m := envOfUsage.FindStringSubmatch(usage)
	if m == nil {
		return usage, ""
	}
	return strings.TrimSpace(strings.Replace(usage, m[0], "", 1)), m[1] + m[2]
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// flagsTable is a flag set as a Markdown table, in -h's order.
func flagsTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | env | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		meaning, env := splitUsage(f.Usage)
		envCell := ""
		if name, list, ok := strings.Cut(env, ","); ok {
			envCell = code(name) + " (" + strings.TrimSpace(list) + ")"
		} else {
			envCell = code(env)
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, envCell, mdCell(code(f.DefValue)), mdCell(meaning))
	})
	return b.String()
}

func beginMark(name string) string {
	return "<!-- flags " + name + ": generated from its flag set by `go test ./internal/app -run TestFlagsReference -update`; edit the usage strings, not this table -->\n"
}

func endMark(name string) string { return "<!-- end flags " + name + " -->" }

// flagsBlock finds a command's generated table in the doc.
func flagsBlock(doc, name string) (start, end int, ok bool) {
	b := strings.Index(doc, beginMark(name))
	if b < 0 {
		return 0, 0, false
	}
	start = b + len(beginMark(name))
	e := strings.Index(doc[start:], endMark(name))
	if e < 0 {
		return 0, 0, false
	}
	return start, start + e, true
}

// TestFlagsReference keeps docs/OPERATIONS.md's flags reference the
// flag sets' own: each subcommand's table is what its flag set
// generates (-update rewrites it), and agrees with what `aepforms
// <command> -h` prints, flag by flag: name, env, default and meaning.
func TestFlagsReference(t *testing.T) {
	raw, err := os.ReadFile(operationsDoc)
	require.NoError(t, err)
	doc := string(raw)
	cmds := docCommands()

	documented := map[string]bool{}
	for _, c := range cmds {
		documented[strings.Fields(c.name)[0]] = true
	}
	for _, c := range commands() {
		if c.name != "version" {
			assert.True(t, documented[c.name], "subcommand %s has flags but no table in %s", c.name, operationsDoc)
		}
	}

	for _, c := range cmds {
		start, end, ok := flagsBlock(doc, c.name)
		require.True(t, ok, "%s has no generated table for %q: add %q and %q", operationsDoc, c.name, beginMark(c.name), endMark(c.name))
		want := flagsTable(c.fs)
		if *updateFlagsDoc {
			doc = doc[:start] + want + doc[end:]
			continue
		}
		assert.Equal(t, want, doc[start:end], "the %s table in %s is not its flag set's: run go test ./internal/app -run TestFlagsReference -update", c.name, operationsDoc)
		t.Run(strings.ReplaceAll(c.name, " ", "-")+"/help", func(t *testing.T) {
			var stderr bytes.Buffer
			_ = Run(t.Context(), c.help, docEnv, nil, io.Discard, &stderr)
			help := parseHelp(t, stderr.String())
			rows := parseTable(t, doc[start:end])
			require.NotEmpty(t, help, "no flags in %v's output:\n%s", c.help, stderr.String())
			assert.ElementsMatch(t, keys(help), keys(rows), "flags in -h and in the doc")
			for name, h := range help {
				r, ok := rows[name]
				if !ok {
					continue
				}
				meaning, env := splitUsage(h.usage)
				assert.Equal(t, meaning, r.meaning, "--%s: meaning", name)
				assert.Equal(t, env, r.env, "--%s: env", name)
				if h.def == "" {
					assert.Contains(t, []string{"", "0", "0s", "false"}, r.def, "--%s: -h shows no default, so the doc's must be the zero value", name)
				} else {
					assert.Equal(t, h.def, r.def, "--%s: default", name)
				}
			}
		})
	}
	if *updateFlagsDoc {
		require.NoError(t, os.WriteFile(operationsDoc, []byte(doc), 0o644))
	}
}

type helpFlag struct{ usage, def string }

var (
	helpName    = regexp.MustCompile(`^  -(\S+)(?: \S+)?$`)
	helpDefault = regexp.MustCompile(` \(default (.*)\)$`)
)

// parseHelp reads flag.PrintDefaults' output: "  -name type" then the
// usage on lines starting "    \t", ending " (default X)" unless zero.
func parseHelp(t *testing.T, out string) map[string]helpFlag {
	t.Helper()
	flags := map[string]helpFlag{}
	var name string
	var usage []string
	flush := func() {
		if name == "" {
			return
		}
		u := strings.Join(usage, " ")
		var def string
		if m := helpDefault.FindStringSubmatch(u); m != nil {
			u = strings.TrimSuffix(u, m[0])
			def = m[1]
			if s, err := strconv.Unquote(def); err == nil {
				def = s
			}
		}
		flags[name] = helpFlag{usage: u, def: def}
		name, usage = "", nil
	}
	for _, line := range strings.Split(out, "\n") {
		if m := helpName.FindStringSubmatch(line); m != nil {
			flush()
			name = m[1]
			continue
		}
		if u, ok := strings.CutPrefix(line, "    \t"); ok && name != "" {
			usage = append(usage, u)
		}
	}
	flush()
	return flags
}

type docRow struct{ env, def, meaning string }

// parseTable reads the generated table back:
// | `--name` | `ENV` (comma-separated) | `default` | meaning |.
func parseTable(t *testing.T, table string) map[string]docRow {
	t.Helper()
	rows := map[string]docRow{}
	unescape := func(s string) string { return strings.ReplaceAll(s, `\|`, "|") }
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		inner := strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |")
		cells := strings.Split(inner, " | ") // a bar inside a cell is escaped, so never splits it
		require.Len(t, cells, 4, "row %q", line)
		env, list := strings.CutSuffix(cells[1], " (comma-separated)")
		env = strings.Trim(env, "`")
		if list {
			env += ", comma-separated"
		}
		name := strings.TrimPrefix(strings.Trim(cells[0], "`"), "--")
		rows[name] = docRow{env: env, def: unescape(strings.Trim(cells[2], "`")), meaning: unescape(cells[3])}
	}
	return rows
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
