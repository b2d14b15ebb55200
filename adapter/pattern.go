package adapter

import (
	"fmt"
	"strings"
)

// A pattern matches tensor names: segment by segment, with {x} captures,
// or, when it holds "*" or "?", as a Glob over the whole name.
type pattern struct {
	text  string
	segs  []string // literal segments, or "{x}" captures; nil for a glob
	glob  *Glob
	first string // the first segment when literal, for quick rejection
	last  string // "." and the last segment when literal, likewise
}

// A template builds a name from captures.
type template struct {
	text string
	segs []string
}

func isCapture(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func parsePattern(s string) (pattern, error) {
	p := pattern{text: s}
	if IsGlob(s) {
		if strings.Contains(s, "{") && strings.Contains(s, "}") {
			for _, seg := range strings.Split(s, ".") {
				if isCapture(seg) {
					return p, fmt.Errorf("pattern %s: a glob cannot capture %s", s, seg)
				}
			}
		}
		p.glob = CompileGlob(s)
		return p, nil
	}
	p.segs = strings.Split(s, ".")
	seen := map[string]bool{}
	for _, seg := range p.segs {
		if isCapture(seg) {
			if seen[seg] {
				return p, fmt.Errorf("pattern %s captures %s twice", s, seg)
			}
			seen[seg] = true
		}
	}
	if !isCapture(p.segs[0]) {
		p.first = p.segs[0]
	}
	if n := len(p.segs); n > 1 && !isCapture(p.segs[n-1]) {
		p.last = "." + p.segs[n-1]
	}
	return p, nil
}

// captures returns the pattern's captures in order.
func (p *pattern) captures() []string {
	var out []string
	for _, s := range p.segs {
		if isCapture(s) {
			out = append(out, s)
		}
	}
	return out
}

func parseTemplate(s string) template { return template{text: s, segs: strings.Split(s, ".")} }

// rejects is a quick test on the unsplit name: true when it cannot match.
func (p *pattern) rejects(name string) bool {
	if p.glob != nil {
		return false
	}
	return (p.last != "" && !strings.HasSuffix(name, p.last)) || !strings.HasPrefix(name, p.first)
}

// match reports whether the name, split into segs, fits the pattern, and
// adds its captures to caps.
func (p *pattern) match(name string, segs []string, caps map[string]string) bool {
	if p.glob != nil {
		return p.glob.Match(name)
	}
	if len(segs) != len(p.segs) || (p.first != "" && segs[0] != p.first) {
		return false
	}
	for i, s := range p.segs {
		if !isCapture(s) && s != segs[i] {
			return false
		}
	}
	for i, s := range p.segs {
		if isCapture(s) {
			caps[s] = segs[i]
		}
	}
	return true
}

// expand fills the pattern's captures: the name a concat source must have.
func (p *pattern) expand(caps map[string]string) string {
	return template{text: p.text, segs: p.segs}.expand(caps)
}

func (t template) expand(caps map[string]string) string {
	if len(t.segs) == 1 && !isCapture(t.segs[0]) {
		return t.segs[0]
	}
	n := len(t.segs) - 1
	for _, s := range t.segs {
		if v, ok := caps[s]; ok && isCapture(s) {
			n += len(v)
		} else {
			n += len(s)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i, s := range t.segs {
		if i > 0 {
			b.WriteByte('.')
		}
		if v, ok := caps[s]; ok && isCapture(s) {
			b.WriteString(v)
		} else {
			b.WriteString(s)
		}
	}
	return b.String()
}
