package inbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// Shape is what a request asks, as a comparable key: its kind, its
// options (ids and labels, in order) and its field specs (id, type,
// label, required, multi, other, choices by id and label, bounds). Two
// requests of one shape take the same answer the same way, so one
// answer can be given to many of them at once (a batch). The prompt,
// the agent and the session are not part of it. Empty for a request
// with nothing to answer.
type Shape string

// ShapeOf is req's shape.
func ShapeOf(req aep.Request) Shape {
	if req.Kind == "" && len(req.Options) == 0 && len(req.Fields) == 0 {
		return ""
	}
	var b strings.Builder
	str := func(s string) { // length-prefixed: no two lists read alike
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	str(req.Kind)
	b.WriteString("o")
	b.WriteString(strconv.Itoa(len(req.Options)))
	for _, o := range req.Options {
		str(o.ID)
		str(o.Label)
	}
	b.WriteString("f")
	b.WriteString(strconv.Itoa(len(req.Fields)))
	for _, f := range req.Fields {
		str(f.ID)
		str(f.Type)
		str(f.Label)
		b.WriteString(strconv.FormatBool(f.Required) + strconv.FormatBool(f.Multi) + strconv.FormatBool(f.Other))
		b.WriteString("c")
		b.WriteString(strconv.Itoa(len(f.Choices)))
		for _, c := range f.Choices {
			str(c.ID)
			str(c.Label)
		}
		bound := func(p *float64) {
			if p == nil {
				b.WriteString("-")
				return
			}
			str(strconv.FormatFloat(*p, 'g', -1, 64))
		}
		bound(f.Min)
		bound(f.Max)
	}
	return Shape(b.String())
}

// ID is the shape's short, URL- and HTML-safe name: what a page and a
// batch post call it by.
func (s Shape) ID() string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
