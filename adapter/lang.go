package adapter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The adapter language: one rule a line, "#" starts a comment.
//
//	name NAME                  the adapter's name (required)
//	doc TEXT                   a line of documentation
//	family MODEL_TYPE...       config.json model_type values it is for (auto only)
//
// Rewrites change a name and go on to the next rule:
//
//	strip-prefix PREFIX        remove PREFIX from names that start with it
//	remove-segment SEGMENT     remove every dot-separated path segment SEGMENT
//	regex REGEXP REPLACEMENT   Go regexp replace, $1 for groups
//
// Mappings end a tensor's trip through the file; the first that matches wins:
//
//	rename SRC DST                       one tensor to another name
//	unstack SRC DST... [sizes=E,...]     dim 0 indexes {e}: one tensor per slice; with
//	                                     several DSTs each slice is split along its dim 0
//	split SRC DST... [dim=N] [groups=E] [sizes=E,...]
//	                                     along dim N (default 0), made of `groups` repeats
//	                                     of blocks of the given sizes (default equal parts)
//	concat SRC+SRC... DST [dim=N]        several tensors joined along dim N into one
//	permute SRC DST heads=E              rotary row order: DST = SRC.view(heads, rows/heads/2,
//	                                     2, cols).transpose(1, 2).reshape(rows, cols)
//	drop SRC REASON...                   no counterpart, said as adapter_dropped
//	ignore SRC                           not a weight (buffers), left out silently
//
// Patterns are dotted names in which {x} matches one path segment and binds
// x for the DST templates, and * matches any run of characters. Expressions
// E are integers and config.json fields (num_attention_heads,
// num_key_value_heads, head_dim, hidden_size, ...) with + - * /.

type opKind int

const (
	opStripPrefix opKind = iota
	opRemoveSegment
	opRegex
	opRename
	opUnstack
	opSplit
	opConcat
	opPermute
	opDrop
	opIgnore
)

var opNames = map[string]opKind{
	"strip-prefix": opStripPrefix, "remove-segment": opRemoveSegment, "regex": opRegex,
	"rename": opRename, "unstack": opUnstack, "split": opSplit, "concat": opConcat,
	"permute": opPermute, "drop": opDrop, "ignore": opIgnore,
}

func (k opKind) rewrite() bool { return k <= opRegex }

// A rule is one line of an adapter file.
type rule struct {
	kind    opKind
	text    string // the line as written, for --explain and errors
	line    int
	src     []pattern // concat has several
	dst     []template
	literal string // strip-prefix, remove-segment
	re      *regexp.Regexp
	repl    string
	reason  string
	dim     int
	groups  *expr
	sizes   []*expr
	heads   *expr
}

// A pattern matches a tensor name segment by segment.
type pattern struct {
	text  string
	segs  []string // literal segments, or "{x}" captures
	glob  *regexp.Regexp
	first string // the first segment when literal, for quick rejection
	last  string // the last segment when literal, likewise
}

// A template builds a name from captures.
type template struct {
	text string
	segs []string
}

// Parse reads an adapter written in the language above. source names it in
// errors.
func Parse(source string, text string) (*Adapter, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s: not UTF-8 text", source)
	}
	a := &Adapter{Source: text}
	for n, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", source, n+1, fmt.Sprintf(format, args...))
		}
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		fields := strings.Fields(rest)
		switch word {
		case "name":
			if len(fields) != 1 {
				return nil, fail("name takes one word")
			}
			a.Name = fields[0]
			continue
		case "doc":
			a.Doc = strings.TrimSpace(a.Doc + " " + rest)
			continue
		case "family":
			a.Families = append(a.Families, fields...)
			continue
		}
		kind, ok := opNames[word]
		if !ok {
			return nil, fail("unknown rule %q", word)
		}
		r, err := parseRule(kind, line, fields, rest)
		if err != nil {
			return nil, fail("%s: %v", word, err)
		}
		r.line = n + 1
		a.rules = append(a.rules, r)
	}
	if a.Name == "" {
		return nil, fmt.Errorf("%s: no name line", source)
	}
	return a, nil
}

func parseRule(kind opKind, line string, fields []string, rest string) (*rule, error) {
	r := &rule{kind: kind, text: line}
	// key=value options come last.
	opts := map[string]string{}
	for len(fields) > 0 && kind != opDrop {
		k, v, ok := strings.Cut(fields[len(fields)-1], "=")
		if !ok || kind == opRegex {
			break
		}
		opts[k] = v
		fields = fields[:len(fields)-1]
	}
	need := func(min, max int) error {
		if len(fields) < min || (max >= 0 && len(fields) > max) {
			return fmt.Errorf("wrong number of arguments")
		}
		return nil
	}
	var err error
	switch kind {
	case opStripPrefix, opRemoveSegment:
		if err := need(1, 1); err != nil {
			return nil, err
		}
		r.literal = fields[0]
	case opRegex:
		if err := need(2, 2); err != nil {
			return nil, err
		}
		if r.re, err = regexp.Compile(fields[0]); err != nil {
			return nil, err
		}
		r.repl = fields[1]
	case opDrop:
		if len(fields) < 2 {
			return nil, fmt.Errorf("want a pattern and a reason")
		}
		r.src = []pattern{parsePattern(fields[0])}
		r.reason = strings.TrimSpace(strings.TrimPrefix(rest, fields[0]))
	case opIgnore:
		if err := need(1, 1); err != nil {
			return nil, err
		}
		r.src = []pattern{parsePattern(fields[0])}
	case opRename, opPermute:
		if err := need(2, 2); err != nil {
			return nil, err
		}
		r.src = []pattern{parsePattern(fields[0])}
		r.dst = []template{parseTemplate(fields[1])}
	case opUnstack, opSplit:
		if err := need(2, -1); err != nil {
			return nil, err
		}
		r.src = []pattern{parsePattern(fields[0])}
		for _, f := range fields[1:] {
			r.dst = append(r.dst, parseTemplate(f))
		}
	case opConcat:
		if err := need(2, 2); err != nil {
			return nil, err
		}
		for _, s := range strings.Split(fields[0], "+") {
			r.src = append(r.src, parsePattern(s))
		}
		if len(r.src) < 2 {
			return nil, fmt.Errorf("want two or more sources joined by +")
		}
		r.dst = []template{parseTemplate(fields[1])}
	}
	for k, v := range opts {
		switch {
		case k == "dim" && (kind == opSplit || kind == opConcat):
			if r.dim, err = strconv.Atoi(v); err != nil || r.dim < 0 {
				return nil, fmt.Errorf("dim=%s: want a dimension number", v)
			}
		case k == "groups" && kind == opSplit:
			r.groups, err = parseExpr(v)
		case k == "sizes" && (kind == opSplit || kind == opUnstack):
			for _, s := range strings.Split(v, ",") {
				e, perr := parseExpr(s)
				if perr != nil {
					return nil, perr
				}
				r.sizes = append(r.sizes, e)
			}
		case k == "heads" && kind == opPermute:
			r.heads, err = parseExpr(v)
		default:
			return nil, fmt.Errorf("unknown option %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if kind == opPermute && r.heads == nil {
		return nil, fmt.Errorf("needs heads=")
	}
	if r.sizes != nil && len(r.sizes) != len(r.dst) {
		return nil, fmt.Errorf("%d sizes for %d outputs", len(r.sizes), len(r.dst))
	}
	// Every capture a template uses must come from the pattern ({e} from unstack).
	bound := map[string]bool{}
	for _, p := range r.src {
		for _, s := range p.segs {
			if isCapture(s) {
				bound[s] = true
			}
		}
	}
	if kind == opUnstack {
		bound["{e}"] = true
	}
	for _, t := range r.dst {
		for _, s := range t.segs {
			if isCapture(s) && !bound[s] {
				return nil, fmt.Errorf("%s uses %s, which the pattern does not capture", t.text, s)
			}
		}
	}
	return r, nil
}

func isCapture(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func parsePattern(s string) pattern {
	p := pattern{text: s, segs: strings.Split(s, ".")}
	if strings.Contains(s, "*") {
		var re strings.Builder
		re.WriteString("^")
		for i, part := range strings.Split(s, "*") {
			if i > 0 {
				re.WriteString(".*")
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString("$")
		p.glob = regexp.MustCompile(re.String()) // quoted parts of valid UTF-8 always compile
		p.segs = nil
		return p
	}
	if !isCapture(p.segs[0]) {
		p.first = p.segs[0]
	}
	if n := len(p.segs); n > 1 && !isCapture(p.segs[n-1]) {
		p.last = "." + p.segs[n-1]
	}
	return p
}

func parseTemplate(s string) template { return template{text: s, segs: strings.Split(s, ".")} }

// rejects is a quick test on the unsplit name: true when it cannot match.
func (p *pattern) rejects(name string) bool {
	return p.glob == nil && ((p.last != "" && !strings.HasSuffix(name, p.last)) || !strings.HasPrefix(name, p.first))
}

// match reports whether the name, split into segs, fits the pattern, and
// adds its captures to caps.
func (p *pattern) match(name string, segs []string, caps map[string]string) bool {
	if p.glob != nil {
		return p.glob.MatchString(name)
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

func (t template) expand(caps map[string]string) string {
	parts := make([]string, len(t.segs))
	for i, s := range t.segs {
		if v, ok := caps[s]; ok && isCapture(s) {
			parts[i] = v
		} else {
			parts[i] = s
		}
	}
	return strings.Join(parts, ".")
}

// An expr is an integer expression over config values.
type expr struct {
	text   string
	tokens []string
}

func parseExpr(s string) (*expr, error) {
	e := &expr{text: s}
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case strings.ContainsRune("+-*/", c):
			e.tokens = append(e.tokens, string(c))
			i++
		case unicode.IsDigit(c) || unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(s) && (unicode.IsDigit(rune(s[j])) || unicode.IsLetter(rune(s[j])) || s[j] == '_') {
				j++
			}
			e.tokens = append(e.tokens, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("expression %q: unexpected %q", s, c)
		}
	}
	if _, err := e.eval(nil, true); err != nil {
		return nil, err
	}
	return e, nil
}

// eval computes the expression: * and / before + and -, left to right,
// integer division that must be exact. With syntaxOnly, names count as 1.
func (e *expr) eval(env Env, syntaxOnly bool) (int64, error) {
	pos := 0
	operand := func() (int64, error) {
		if pos >= len(e.tokens) {
			return 0, fmt.Errorf("expression %q ends early", e.text)
		}
		t := e.tokens[pos]
		pos++
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, nil
		}
		if strings.ContainsAny(t, "+-*/") {
			return 0, fmt.Errorf("expression %q: unexpected %s", e.text, t)
		}
		if syntaxOnly {
			return 1, nil
		}
		v, ok := env.Get(t)
		if !ok {
			return 0, fmt.Errorf("config.json has no %s", t)
		}
		return int64(v), nil
	}
	term := func() (int64, error) {
		v, err := operand()
		for err == nil && pos < len(e.tokens) && (e.tokens[pos] == "*" || e.tokens[pos] == "/") {
			op := e.tokens[pos]
			pos++
			var w int64
			if w, err = operand(); err != nil {
				break
			}
			switch {
			case syntaxOnly:
			case op == "*":
				v *= w
			case w == 0 || v%w != 0:
				err = fmt.Errorf("expression %s: %d / %d is not a whole number", e.text, v, w)
			default:
				v /= w
			}
		}
		return v, err
	}
	v, err := term()
	for err == nil && pos < len(e.tokens) {
		op := e.tokens[pos]
		pos++
		var w int64
		if w, err = term(); err != nil {
			break
		}
		switch op {
		case "+":
			v += w
		case "-":
			v -= w
		default:
			err = fmt.Errorf("expression %q: unexpected %s", e.text, op)
		}
	}
	return v, err
}
