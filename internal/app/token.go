package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// loadOrMintToken returns the relay token kept in path, minting one (256
// random bits, hex) and writing it readable only by the user when the file
// does not exist yet. A file others can read is refused, not used.
func loadOrMintToken(path string) (token, where string, err error) {
	if path == "" {
		return "", "", errors.New("no place for the relay token: set AEP_TOKEN, --token-file or HOME")
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		st, serr := os.Stat(path)
		if serr == nil && st.Mode().Perm()&0o077 != 0 {
			return "", "", fmt.Errorf("relay token file %s is readable by others (mode %v): chmod 600 it or delete it", path, st.Mode().Perm())
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, path, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("read relay token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("mint relay token: %w", err)
	}
	token = hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", fmt.Errorf("relay token directory: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("write relay token: %w", err)
	}
	return token, path, nil
}
