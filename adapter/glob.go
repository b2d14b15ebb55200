package adapter

import (
	"strings"
	"unicode/utf8"
)

// A Glob is a compiled name pattern in the project's one glob dialect, used
// by adapter patterns, policy matches, inspect --filter and --ignore. A "*"
// matches any run of characters, dots included, and a "?" one character:
//
//	*.bias                  every bias
//	model.layers.*.mlp.*    every MLP tensor of every layer
//	layers.?.attention.wq   wq of layers 0 to 9
//
// Every other character matches itself; there is no escape, no class and no
// brace, so every pattern is valid. Names are matched as UTF-8: "?" takes
// one rune. Unlike path.Match, "*" crosses dots: tensor names are not paths,
// and "*.bias" should mean every bias.
//
// A Glob is safe for concurrent use.
type Glob struct {
	pattern string
	// parts is the pattern split at "*": len 1 when there is no "*".
	parts []string
	// wild reports a "?" in the pattern, which needs the general matcher.
	wild bool
}

// CompileGlob compiles a pattern. It cannot fail: every pattern is valid.
func CompileGlob(pattern string) *Glob {
	return &Glob{pattern: pattern, parts: strings.Split(pattern, "*"), wild: strings.Contains(pattern, "?")}
}

// IsGlob reports whether s holds a "*" or "?", so that it matches more
// than itself.
func IsGlob(s string) bool { return strings.ContainsAny(s, "*?") }

// String returns the pattern the Glob was compiled from.
func (g *Glob) String() string { return g.pattern }

// Match reports whether the whole of name fits the pattern.
//
// A pattern without "?" is matched with string searches, in time linear in
// the name for each "*"; one with "?" with the usual backtracking to the
// last "*", in time at most the product of the two lengths.
func (g *Glob) Match(name string) bool {
	if g.wild {
		return matchWild(g.pattern, name)
	}
	p := g.parts
	if len(p) == 1 {
		return name == p[0]
	}
	first, last := p[0], p[len(p)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	// The middle parts, leftmost first, between the prefix and the suffix.
	name = name[len(first) : len(name)-len(last)]
	for _, part := range p[1 : len(p)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return true
}

// matchWild matches a pattern that may hold "?": a "*" first matches
// nothing and, when the rest fails, one more rune at a time; only the
// latest "*" needs retrying, since an earlier one could only move the
// same suffix later.
func matchWild(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+w
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px, nx = px+1, nx+1
					continue
				}
			}
		}
		if starPx < 0 || starNx >= len(name) {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starNx:])
		starNx += w
		px, nx = starPx+1, starNx
	}
	return true
}
