package app

import (
	"errors"
	"strconv"
	"strings"
)

// sizeFlag is a byte count given as a number of bytes or with a binary
// unit: 16384, 16KiB, 64MiB, 1GiB (KB, MB and GB are read as the same).
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// parseSize reads a byte count: digits, then an optional unit B, KiB,
// MiB or GiB (case-insensitive; KB, MB, GB, K, M, G mean the same).
func parseSize(v string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.New("want a positive size like 16384, 16KiB or 64MiB, got " + strconv.Quote(v))
	}
	return n * mult, nil
}
