package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vnuReport is the Nu Html Checker's JSON output.
type vnuReport struct {
	Messages []struct {
		Type     string `json:"type"`
		URL      string `json:"url"`
		Line     int    `json:"lastLine"`
		Message  string `json:"message"`
		Extract  string `json:"extract"`
		SubType  string `json:"subType"`
		FirstCol int    `json:"firstColumn"`
	} `json:"messages"`
}

// TestMarkupIsValidHTML runs every page and panel (cards of every kind and
// state, refused posts, sign-in) through the Nu Html Checker, errors only,
// and the pushed card fragments inside a minimal document.
func TestMarkupIsValidHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts the Nu Html Checker")
	}
	java, jar := findVNU(t)
	dir := t.TempDir()
	files := map[string]string{} // file -> page name
	for i, p := range markupPages(t) {
		var r response
		if p.post != nil {
			r = p.h.postForm(p.c, p.path, p.post)
			require.GreaterOrEqual(t, r.StatusCode, 400, "%s: the post should be refused", p.name)
		} else {
			r = p.h.getPage(p.c, p.path)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", p.name)
		}
		f := filepath.Join(dir, "page"+strconv.Itoa(i)+".html")
		require.NoError(t, os.WriteFile(f, []byte(r.body), 0o600))
		files[f] = p.name
	}
	// The fragments the push stream sends are inserted into the page's
	// body: each must be valid there on its own.
	h := newHarness(t)
	f := seedEveryKind(h)
	for i, id := range []string{string(f.Form), string(f.Permission), string(f.Answered), string(f.Malformed), string(f.Rejected)} {
		r := h.getPage(nil, "cards/"+url.PathEscape(id))
		require.Equal(t, http.StatusOK, r.StatusCode)
		doc := "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>fragment</title></head><body>" + r.body + "</body></html>"
		name := filepath.Join(dir, "fragment"+strconv.Itoa(i)+".html")
		require.NoError(t, os.WriteFile(name, []byte(doc), 0o600))
		files[name] = "card fragment " + id
	}

	args := []string{"-jar", jar, "--errors-only", "--exit-zero-always", "--format", "json"}
	for f := range files {
		args = append(args, f)
	}
	cmd := exec.Command(java, args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "vnu: %s", out)
	var rep vnuReport
	require.NoError(t, json.Unmarshal(out, &rep), "vnu output: %s", out)
	for _, m := range rep.Messages {
		file := strings.TrimPrefix(m.URL, "file:")
		assert.Fail(t, "invalid HTML", "%s, line %d col %d: %s: %s\n  %s", files[file], m.Line, m.FirstCol, m.Type, m.Message, m.Extract)
	}
}
