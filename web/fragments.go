package web

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aepforms/aepforms/components"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
)

// fragmentCacheSize bounds the rendered fragments kept; past it the cache
// starts over (a burst of changes renders each card once again).
const fragmentCacheSize = 4096

// fragments renders each card version once for every browser on the push
// stream, instead of once per browser. A fragment is rendered with a
// per-process random placeholder in place of the form token, and every
// copy sent gets a fresh token swapped in: tokens stay one per delivered
// form (two tabs never share one), and agent text cannot forge the
// placeholder, which it never sees. Relative times are kept to the
// minute they were rendered in.
type fragments struct {
	placeholder string
	mu          sync.Mutex
	m           map[fragmentKey]string
}

type fragmentKey struct {
	card    inbox.CardID
	version uint64
	minute  int64
}

func newFragments() *fragments {
	// The token alphabet (base64url) never holds '.', so the placeholder
	// cannot be mistaken for a real token either.
	return &fragments{placeholder: "tok." + newToken(), m: make(map[fragmentKey]string)}
}

// card returns the fragment of c for one browser, with its own form token.
func (f *fragments) card(s *server, r *http.Request, c inbox.Card) (string, error) {
	now := s.cfg.Now()
	key := fragmentKey{card: c.ID, version: c.Version, minute: now.Truncate(time.Minute).Unix()}
	f.mu.Lock()
	html, ok := f.m[key]
	f.mu.Unlock()
	if !ok {
		opts := render.Options{
			BasePath: s.cfg.BasePath, Now: now, Token: f.placeholder, CanSubmit: s.canSubmit(),
			Reachable: s.reachable(c.Key.Session),
		}
		var buf bytes.Buffer
		buf.Grow(8 << 10)
		if err := components.CardFragment(render.Card(c, opts)).Render(r.Context(), &buf); err != nil {
			return "", err
		}
		html = buf.String()
		f.mu.Lock()
		if len(f.m) >= fragmentCacheSize {
			clear(f.m)
		}
		f.m[key] = html
		f.mu.Unlock()
	}
	return strings.ReplaceAll(html, f.placeholder, newToken()), nil
}
