// Package textfmt writes numbers, counts and names the same way everywhere
// ckptcheck prints them: in finding messages (package verify) and in
// reports (package report).
package textfmt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Thousands writes 4022468096 as "4,022,468,096".
func Thousands[T ~int | ~int64 | ~uint64 | ~uint](n T) string {
	neg := n < 0
	var s string
	if neg {
		s = strconv.FormatUint(uint64(-int64(n)), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Plural writes a count and a noun: "1 tensor", "2,000 tensors", "3 matches".
func Plural[T ~int | ~int64 | ~uint64](n T, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"), strings.HasSuffix(noun, "x"):
		noun += "es"
	case strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey"):
		noun = noun[:len(noun)-1] + "ies"
	default:
		noun += "s"
	}
	return Thousands(n) + " " + noun
}

// Float writes a statistic with four significant digits: 0.001234, 1.5e-07.
func Float(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// Quote escapes a name that holds control or non-printing characters, so
// that a hostile tensor name cannot rewrite the terminal; other names are
// returned as they are.
func Quote(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7E {
			ascii = false
			break
		}
	}
	if ascii {
		return s // printable ASCII, the usual name
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// IndexRanges writes numbers as sorted ranges: "0..35" or "0..3,5,7..9".
func IndexRanges(nums []int) string {
	nums = slices.Compact(slices.Sorted(slices.Values(nums)))
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(nums[i])+".."+strconv.Itoa(nums[j]))
		} else {
			parts = append(parts, strconv.Itoa(nums[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Names writes up to n names, quoted, and how many more there are:
// "a, b and 3 more".
func Names(names []string, n int) string {
	quoted := make([]string, 0, min(n, len(names)))
	for _, s := range names[:min(n, len(names))] {
		quoted = append(quoted, Quote(s))
	}
	s := strings.Join(quoted, ", ")
	if len(names) > n {
		s += fmt.Sprintf(" and %d more", len(names)-n)
	}
	return s
}

// JSONError is an encoding/json decoding error without Go's type names.
func JSONError(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("%s (at byte %d)", e.Error(), e.Offset)
	case *json.UnmarshalTypeError:
		if e.Field == "" { // the document itself
			return fmt.Sprintf("a JSON %s, not an object", e.Value)
		}
		return fmt.Sprintf("field %s holds a JSON %s of the wrong kind (at byte %d)", e.Field, e.Value, e.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
