package main

import (
	"cmp"
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

// naturalCompare orders names with numbers by value: layers.2 before
// layers.10. It scans the common prefix bytewise, so sorting tens of
// thousands of similar names stays cheap.
func naturalCompare(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	// Compare the numbers that the first difference falls in, if any.
	start := i
	for start > 0 && isDigit(a[start-1]) {
		start--
	}
	ea, eb := digitsEnd(a, start), digitsEnd(b, start)
	if ea > start && eb > start {
		na, nb := strings.TrimLeft(a[start:ea], "0"), strings.TrimLeft(b[start:eb], "0")
		if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
			return c
		}
		if c := naturalCompare(a[ea:], b[eb:]); c != 0 {
			return c
		}
		return strings.Compare(a, b) // equal values written differently: 01 vs 1
	}
	return strings.Compare(a[i:], b[i:])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
