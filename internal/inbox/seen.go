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

func seenKeyOf(k aep.Key) seenKey { return digestPair(k.Source, k.ID) }

// sessionDigest is a (source, session) as the ended marks keep it, the
// same way: an ended session costs a fixed few bytes, whatever its names.
func sessionDigest(k aep.SessionKey) seenKey { return digestPair(k.Source, k.Session) }

// digestPair is the first 128 bits of the SHA-256 of a, b.
func digestPair(a, b string) seenKey {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(a)))
	h.Write(n[:]) // the length first: no pair reads as another
	h.Write([]byte(a))
	h.Write([]byte(b))
	var out seenKey
	copy(out[:], h.Sum(nil))
	return out
}
