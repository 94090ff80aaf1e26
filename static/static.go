// Package static holds the operator UI's stylesheet, script and tab icon, embedded
// in the binary. The web server serves FS under {base}/static/; pages link
// the files with ?v=Hash() so a new build busts browser caches.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sync"
)

// Names are the embedded files, all at FS's root.
var Names = []string{"app.css", "app.js", "icon.svg", "push.js", "signin.js", "sw.js"}

// FS holds app.css, app.js, icon.svg, push.js (Web Push on the page),
// signin.js (the panel's sign-in through a window of its own) and sw.js
// (the service worker, served at {base}sw.js) at its root.
//
//go:embed app.css app.js icon.svg push.js signin.js sw.js
var FS embed.FS

// hash is computed once: FS never changes at run time.
var hash = sync.OnceValue(func() string {
	h := sha256.New()
	for _, name := range Names {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			panic("static: " + name + " missing from the embedded files: " + err.Error())
		}
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
})

// Hash is a short content hash of the embedded files (12 hex digits), for
// cache-busting query strings: a response for a URL carrying the current
// Hash may be cached as immutable.
func Hash() string { return hash() }
