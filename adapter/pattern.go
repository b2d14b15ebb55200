package adapter

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// A pattern matches tensor names: segment by segment, with {x} captures,
// or, when it holds "*" or "?", as a Glob over the whole name.
type pattern struct {
	text  string
	segs  []string // literal segments, or "{x}" captures; nil for a glob
	glob  *Glob
	first string   // the first segment when literal, for quick rejection
	last  string   // "." and the last segment when literal, likewise
	inner []string // the literal segments between them, with their dots, likewise
}

// A template builds a name from captures. A segment in braces holding an
// operator is an expression over numeric captures and config values
// ({j+num_hidden_layers}); exprs holds it, by segment.
type template struct {
	text  string
	segs  []string
	exprs []*expr // nil when no segment is an expression
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
	for i := 1; i+1 < len(p.segs); i++ {
		if seg := p.segs[i]; !isCapture(seg) {
			p.inner = append(p.inner, "."+seg+".")
		}
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

func parseTemplate(s string) (template, error) {
	t := template{text: s, segs: strings.Split(s, ".")}
	for i, seg := range t.segs {
		if !isCapture(seg) || !strings.ContainsAny(seg, "+-*/") {
			continue
		}
		e, err := parseExpr(seg[1 : len(seg)-1])
		if err != nil {
			return t, fmt.Errorf("template %s: %v", s, err)
		}
		if t.exprs == nil {
			t.exprs = make([]*expr, len(t.segs))
		}
		t.exprs[i] = e
	}
	return t, nil
}

// names lists the bare names an expression segment reads.
func (t template) names() []string {
	var out []string
	for _, e := range t.exprs {
		if e == nil {
			continue
		}
		for _, tok := range e.tokens {
			if c := tok[0]; isNameByte(c) && !('0' <= c && c <= '9') {
				out = append(out, tok)
			}
		}
	}
	return out
}

// expandEnv is expand for a template that may hold expressions: their
// names are the captures (a decimal segment) or else config values.
func (t template) expandEnv(caps map[string]string, env Env) (string, error) {
	if t.exprs == nil {
		return t.expand(caps), nil
	}
	scope := Env{}
	for k, v := range env {
		scope[k] = v
	}
	for _, name := range t.names() {
		v, ok := caps["{"+name+"}"]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return "", fmt.Errorf("%s: {%s} is %q, not a number", t.text, name, v)
		}
		scope[name] = n
	}
	caps = maps.Clone(caps)
	for i, e := range t.exprs {
		if e == nil {
			continue
		}
		v, err := e.eval(scope, false)
		if err != nil {
			return "", err
		}
		caps[t.segs[i]] = strconv.FormatInt(v, 10)
	}
	return t.expand(caps), nil
}

// rejects is a quick test on the unsplit name: true when it cannot match.
func (p *pattern) rejects(name string) bool {
	if p.glob != nil {
		return false
	}
	if (p.last != "" && !strings.HasSuffix(name, p.last)) || !strings.HasPrefix(name, p.first) {
		return true
	}
	for i := len(p.inner) - 1; i >= 0; i-- { // the last are the rarest
		if !strings.Contains(name, p.inner[i]) {
			return true
		}
	}
	return false
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
