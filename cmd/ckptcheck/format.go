package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// quote escapes a name holding control or non-printing characters so that
// it cannot rewrite the terminal; ordinary names print as they are.
func quote(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

func shapeString(shape []uint64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// groupDigits writes 4022468096 as 4,022,468,096.
func groupDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// humanCount writes parameter counts as Hugging Face does: 4.02B, 151.94M.
func humanCount(n uint64) string {
	return humanUnits(float64(n), "", []string{"", "K", "M", "B", "T"})
}

// humanBytes writes decimal byte sizes: 8.04 GB.
func humanBytes(n uint64) string {
	return humanUnits(float64(n), " ", []string{"B", "KB", "MB", "GB", "TB", "PB"})
}

func humanUnits(v float64, sep string, units []string) string {
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f%s%s", v, sep, units[0])
	}
	return fmt.Sprintf("%.2f%s%s", v, sep, units[i])
}

// naturalCompare orders names with numbers by value: layers.2 before layers.10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func leadingDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
