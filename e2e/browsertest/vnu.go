package browsertest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Document is one HTML document for ValidateHTML: a name for messages and
// its markup.
type Document struct {
	Name string
	HTML string
}

// Fragment is a Document of html placed alone in the body of a minimal
// valid document (doctype, lang, charset, title): for HTML that is pushed
// into a page's body and must be valid there on its own.
func Fragment(name, html string) Document {
	return Document{
		Name: name,
		HTML: "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>fragment</title></head><body>" + html + "</body></html>",
	}
}

// htmlError is one error the Nu Html Checker found.
type htmlError struct {
	Document string // the Document's Name
	Line     int
	Column   int
	Type     string // "error", or "non-document-error" for an I/O problem
	Message  string
	Extract  string
}

// ValidateHTML runs the Nu Html Checker (found by VNU) over docs in one
// run, errors only (warnings are not reported), and fails tb once for each
// error, naming the document, line and column.
func ValidateHTML(tb testing.TB, docs ...Document) {
	tb.Helper()
	for _, e := range checkHTML(tb, docs) {
		assert.Fail(tb, "invalid HTML", "%s, line %d col %d: %s: %s\n  %s", e.Document, e.Line, e.Column, e.Type, e.Message, e.Extract)
	}
}

// checkHTML is ValidateHTML's run of the checker: the errors in docs.
func checkHTML(tb testing.TB, docs []Document) []htmlError {
	tb.Helper()
	java, jar := VNU(tb)
	if len(docs) == 0 {
		return nil
	}
	dir := tb.TempDir()
	names := map[string]string{} // file -> document name
	args := []string{"-jar", jar, "--errors-only", "--exit-zero-always", "--format", "json"}
	for i, d := range docs {
		f := filepath.Join(dir, "doc"+strconv.Itoa(i)+".html")
		require.NoError(tb, os.WriteFile(f, []byte(d.HTML), 0o600))
		names[f] = d.Name
		args = append(args, f)
	}
	out, err := exec.Command(java, args...).CombinedOutput()
	require.NoError(tb, err, "vnu: %s", out)
	var rep struct {
		Messages []struct {
			Type     string `json:"type"`
			URL      string `json:"url"`
			Line     int    `json:"lastLine"`
			FirstCol int    `json:"firstColumn"`
			Message  string `json:"message"`
			Extract  string `json:"extract"`
		} `json:"messages"`
	}
	require.NoError(tb, json.Unmarshal(out, &rep), "vnu output: %s", out)
	errs := make([]htmlError, 0, len(rep.Messages))
	for _, m := range rep.Messages {
		name, ok := names[strings.TrimPrefix(m.URL, "file:")]
		if !ok {
			name = m.URL
		}
		errs = append(errs, htmlError{Document: name, Line: m.Line, Column: m.FirstCol, Type: m.Type, Message: m.Message, Extract: m.Extract})
	}
	return errs
}
