package app

import (
	"flag"
	"fmt"
	"time"
)

// limitsConfig is what the inbox keeps and a page shows: the inbox's
// bounds and each card's and page's budgets.
type limitsConfig struct {
	maxPending  int
	maxBytes    sizeFlag
	maxControls int
	promptBytes sizeFlag
	pageCards   int // waiting requests a page renders in full; the rest are rows
	pageRows    int // rows on a page; the rest are on the next pages
	urlEvery    time.Duration
}

func (c *limitsConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.IntVar(&c.maxPending, "max-pending", e.integer("AEPFORMS_MAX_PENDING", 5000), "open questions kept; past it the agent holding the most loses its oldest (env AEPFORMS_MAX_PENDING)")
	c.maxBytes = e.size("AEPFORMS_MAX_INBOX_BYTES", 64<<20)
	fs.Var(&c.maxBytes, "max-inbox-bytes", "raw request bytes kept, open and settled cards, in B, KiB, MiB or GiB; past it the agent holding the most bytes loses its oldest (env AEPFORMS_MAX_INBOX_BYTES)")
	fs.IntVar(&c.maxControls, "max-controls", e.integer("AEPFORMS_MAX_CONTROLS", 2000), "most form controls one card may need to be offered as a form (the choices of every select, plus one per other field and per option); a bigger one is shown read-only (env AEPFORMS_MAX_CONTROLS)")
	c.promptBytes = e.size("AEPFORMS_PROMPT_BYTES", 16<<10)
	fs.Var(&c.promptBytes, "prompt-bytes", "how much of a prompt a card shows, e.g. 16KiB; Show all fetches the rest (env AEPFORMS_PROMPT_BYTES)")
	fs.IntVar(&c.pageCards, "page-cards", e.integer("AEPFORMS_PAGE_CARDS", 50), "waiting questions the page shows in full, the most urgent; the rest are one-line rows that open in place (env AEPFORMS_PAGE_CARDS)")
	fs.IntVar(&c.pageRows, "page-rows", e.integer("AEPFORMS_PAGE_ROWS", 500), "one-line rows on a page; the rest are on the next pages (env AEPFORMS_PAGE_ROWS)")
	fs.DurationVar(&c.urlEvery, "url-every", e.dur("AEPFORMS_URL_EVERY", 250*time.Millisecond), "the page's script writes the selected question into the page's address at most this often as the selection moves (browsers refuse a page that rewrites it too often); the last one always (env AEPFORMS_URL_EVERY)")
}

func (c *limitsConfig) check(*flag.FlagSet, envDefaults) error {
	if c.maxPending <= 0 || c.maxControls <= 0 {
		return fmt.Errorf("%w: --max-pending and --max-controls must be positive", ErrUsage)
	}
	if c.pageCards <= 0 || c.pageRows <= 0 {
		return fmt.Errorf("%w: --page-cards and --page-rows must be positive", ErrUsage)
	}
	if err := positive("--url-every", c.urlEvery); err != nil {
		return err
	}
	if c.promptBytes > 1<<30 {
		return fmt.Errorf("%w: --prompt-bytes %d: at most 1GiB", ErrUsage, c.promptBytes)
	}
	return nil
}
