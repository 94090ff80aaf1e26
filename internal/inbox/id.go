package inbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// CardID returns the key's card id: "c" and 24 lowercase hex digits of the
// SHA-256 of the length-prefixed source, session and request id. It is
// URL- and HTML-id-safe, stable across restarts, and reveals none of the
// agent-controlled ids.
func (k RequestKey) CardID() CardID {
	h := sha256.New()
	var n [8]byte
	for _, s := range [...]string{k.Source, k.Session, k.RequestID} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	sum := h.Sum(nil)
	return CardID("c" + hex.EncodeToString(sum[:12]))
}
