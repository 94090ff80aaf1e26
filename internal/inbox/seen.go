package inbox

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/aepforms/aepforms/internal/aep"
)

// seenKey is an event's (source, id) as the dedupe remembers it: the first
// 128 bits of their SHA-256. The dedupe's memory then depends on
// Options.MaxSeen alone, not on how long agents make their sources and
// ids, and no remembered key keeps any part of an event alive.
type seenKey [16]byte

func seenKeyOf(k aep.Key) seenKey {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(k.Source)))
	h.Write(n[:]) // the length first: no (source, id) pair reads as another
	h.Write([]byte(k.Source))
	h.Write([]byte(k.ID))
	var out seenKey
	copy(out[:], h.Sum(nil))
	return out
}
