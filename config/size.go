package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SizeBytes is a byte count written the way nccl-tests takes -b/-e: a number with an
// optional K, M or G suffix (case-insensitive) meaning binary multiples, so "8G" is
// 8 GiB = 8589934592 bytes, exactly what all_reduce_perf would run for "-e 8G".
type SizeBytes int64

var sizeUnits = []struct {
	suffix     string
	multiplier int64
}{
	{"G", 1 << 30},
	{"M", 1 << 20},
	{"K", 1 << 10},
}

// ParseSizeBytes accepts "8", "8K", "1M", "8G" and fractions that land on a whole byte
// ("1.5G"), as nccl-tests does. It rejects "GB"/"GiB" spellings because nccl-tests would
// stop reading at the suffix, and a plan value must mean the same on both sides.
func ParseSizeBytes(s string) (SizeBytes, error) {
	text := strings.TrimSpace(s)
	multiplier := int64(1)
	if text != "" {
		for _, unit := range sizeUnits {
			// Compare the last byte only: case-folding whole strings can change their
			// length for non-ASCII input and cut the number in the wrong place.
			if last := text[len(text)-1]; last == unit.suffix[0] || last == unit.suffix[0]+('a'-'A') {
				text, multiplier = strings.TrimSpace(text[:len(text)-1]), unit.multiplier
				break
			}
		}
	}
	if !isDecimal(text) {
		return 0, fmt.Errorf("%q is not a size: write bytes as a number with an optional K, M or G suffix (binary, as nccl-tests reads -b/-e), e.g. 8, 64K, 1M, 8G", s)
	}
	if !strings.Contains(text, ".") {
		// Integers stay integers: a float would round byte counts above 2^53.
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n > math.MaxInt64/multiplier {
			return 0, fmt.Errorf("%q is too large", s)
		}
		return SizeBytes(n * multiplier), nil
	}
	value, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	bytes := value * float64(multiplier)
	if bytes >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return SizeBytes(bytes), nil
}

// isDecimal accepts digits with at most one decimal point, the only number shapes a size
// needs; strconv alone would also take signs, exponents, hex, "inf" and "nan".
func isDecimal(s string) bool {
	digits, points := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			points++
		default:
			return false
		}
	}
	return digits > 0 && points <= 1
}

// String gives the shortest exact form, which nccl-tests reads back to the same count.
func (s SizeBytes) String() string {
	for _, unit := range sizeUnits {
		if s != 0 && int64(s)%unit.multiplier == 0 {
			return strconv.FormatInt(int64(s)/unit.multiplier, 10) + unit.suffix
		}
	}
	return strconv.FormatInt(int64(s), 10)
}
