package miniyaml

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Scalars, as libyaml scans them (yaml/libyaml src/scanner.c, ported to
// go.yaml.in/yaml/v3 scannerc.go): the whitespace and line folding of
// plain, quoted and block scalars follows its loops step for step.

// A context is where a scalar stands.
type context uint8

const (
	ctxKey   context = iota // a block mapping's key: one line
	ctxValue                // a block node: plain scalars continue on more-indented lines
	ctxFlow                 // inside [ ] or { }
)

func isFlowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

// scalar reads a plain or quoted scalar; continuation lines must be
// indented at least minIndent.
func (p *parser) scalar(ctx context, minIndent int) (*Node, error) {
	switch p.peek() {
	case '\'', '"':
		return p.quoted(minIndent)
	}
	return p.plain(ctx, minIndent)
}

// plainStarts reports whether a plain scalar may start at pos.
func (p *parser) plainStarts(ctx context) bool {
	c, next := p.peek(), p.at(p.pos+1)
	switch c {
	case 0, '\n', '\r', ' ', '\t', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':':
		return ctx != ctxFlow && !isSpaceOrEnd(next)
	case '-':
		return !isSpaceOrEnd(next) && !(ctx == ctxFlow && isFlowIndicator(next))
	}
	return true
}

// plainRun reads the rest of a plain scalar's line, up to what ends it,
// less trailing blanks; it reports whether a line break (or the end)
// ended it.
func (p *parser) plainRun(ctx context) (run []byte, atBreak bool) {
	start, end := p.pos, p.pos
	for {
		c := p.peek()
		switch {
		case c == 0 || isBreak(c):
			p.pos = end
			return p.src[start:end], true
		case c == ':' && isSpaceOrEnd(p.at(p.pos+1)),
			c == '#' && isBlank(p.at(p.pos-1)),
			ctx == ctxFlow && (isFlowIndicator(c) || c == '?'):
			p.pos = end
			return p.src[start:end], false
		}
		p.pos++
		if !isBlank(c) {
			end = p.pos
		}
	}
}

func (p *parser) plain(ctx context, minIndent int) (*Node, error) {
	if !p.plainStarts(ctx) {
		if p.unsupported() != "" {
			return nil, p.errf("%s", p.unsupported())
		}
		return nil, p.errf("unexpected %q", p.peek())
	}
	line := p.line
	run, atBreak := p.plainRun(ctx)
	text := string(run)
	if ctx == ctxFlow && atBreak && p.flowPlainGoesOn() {
		return nil, p.errf("a plain scalar over several lines inside [ ] or { } is not supported (quote it)")
	}
	for ctx == ctxValue && atBreak {
		more, breaks, ok, err := p.continuation(minIndent)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if breaks == 0 {
			text += " "
		} else {
			text += strings.Repeat("\n", breaks)
		}
		text += string(more)
		atBreak = p.peek() == 0 || isBreak(p.peek())
	}
	return &Node{Kind: Scalar, Value: text, Null: plainNull(text), Line: line}, nil
}

// flowPlainGoesOn reports whether, past the line break at pos, the
// next character would continue a plain scalar inside a flow collection
// rather than end it (YAML folds such a scalar over the lines).
func (p *parser) flowPlainGoesOn() bool {
	i := p.pos
	for i < len(p.src) && (isBlank(p.src[i]) || isBreak(p.src[i])) {
		i++
	}
	c := p.at(i)
	switch {
	case c == 0, isFlowIndicator(c), c == '?', c == '#', c == ':' && isSpaceOrEnd(p.at(i+1)):
		return false
	}
	return true
}

// continuation looks past the line break at pos for a line that goes on
// a block plain scalar: indented at least minIndent, not a comment or a
// document marker. It returns that line's run and the empty lines
// before it; without one the parser is left as it was.
func (p *parser) continuation(minIndent int) (run []byte, breaks int, ok bool, err error) {
	save := *p
	for p.pos < len(p.src) && !isBreak(p.peek()) {
		p.pos++ // trailing blanks
	}
	for p.pos < len(p.src) {
		p.newline()
		if p.isMarker() {
			break
		}
		if err := p.skipIndent(); err != nil {
			*p = save
			return nil, 0, false, err
		}
		c := p.peek()
		if c == 0 {
			break
		}
		if isBreak(c) {
			breaks++
			continue
		}
		if c == '#' || p.col() < minIndent {
			break
		}
		run, _ = p.plainRun(ctxValue)
		return run, breaks, true, nil
	}
	*p = save
	return nil, 0, false, nil
}

// isMarker reports whether a document marker (--- or ...) starts the
// line at pos.
func (p *parser) isMarker() bool {
	c := p.peek()
	return p.pos == p.lineStart && (c == '-' || c == '.') && p.at(p.pos+1) == c && p.at(p.pos+2) == c && isSpaceOrEnd(p.at(p.pos+3))
}

// quoted reads a single- or double-quoted scalar.
func (p *parser) quoted(minIndent int) (*Node, error) {
	line, single := p.line, p.peek() == '\''
	p.pos++
	var b strings.Builder
	for {
		c := p.peek()
		switch {
		case c == 0:
			return nil, p.errf("a quoted scalar without its closing quote (opened on line %d)", line)
		case single && c == '\'' && p.at(p.pos+1) == '\'':
			b.WriteByte('\'')
			p.pos += 2
		case single && c == '\'' || !single && c == '"':
			p.pos++
			return &Node{Kind: Scalar, Value: b.String(), Quoted: true, Line: line}, nil
		case !single && c == '\\' && isBreak(p.at(p.pos+1)):
			p.pos++
			p.newline()
			if err := p.fold(&b, true, minIndent); err != nil {
				return nil, err
			}
		case !single && c == '\\':
			if err := p.escape(&b); err != nil {
				return nil, err
			}
		case isBlank(c) || isBreak(c):
			if err := p.fold(&b, false, minIndent); err != nil {
				return nil, err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// fold consumes blanks and line breaks inside a quoted scalar and writes
// what they fold to: blanks within a line are kept, one line break is a
// space, n > 1 are n−1 newlines (after an escaped break, n newlines).
func (p *parser) fold(b *strings.Builder, escapedBreak bool, minIndent int) error {
	var blanks []byte
	leadingBlanks, leadingBreak, trailingBreaks := escapedBreak, false, 0
	for {
		c := p.peek()
		if isBlank(c) {
			if !leadingBlanks {
				blanks = append(blanks, c)
			}
			p.pos++
			continue
		}
		if !isBreak(c) {
			break
		}
		if !leadingBlanks {
			blanks, leadingBreak, leadingBlanks = nil, true, true
		} else {
			trailingBreaks++
		}
		p.newline()
		if p.isMarker() {
			return p.errf("a document marker inside a quoted scalar")
		}
	}
	if leadingBlanks && p.peek() != 0 && p.col() < minIndent {
		return p.errf("a quoted scalar's line indented less than its node")
	}
	switch {
	case !leadingBlanks:
		b.Write(blanks)
	case leadingBreak && trailingBreaks == 0:
		b.WriteByte(' ')
	default:
		b.WriteString(strings.Repeat("\n", trailingBreaks))
	}
	return nil
}

// simpleEscape is double-quoted YAML's one-character escape after a
// backslash (a switch, not a map: a map literal would be built at init).
func simpleEscape(c byte) (string, bool) {
	switch c {
	case '0':
		return "\x00", true
	case 'a':
		return "\a", true
	case 'b':
		return "\b", true
	case 't', '\t':
		return "\t", true
	case 'n':
		return "\n", true
	case 'v':
		return "\v", true
	case 'f':
		return "\f", true
	case 'r':
		return "\r", true
	case 'e':
		return "\x1b", true
	case ' ', '"', '/', '\\':
		return string(c), true
	case 'N':
		return "\u0085", true
	case '_':
		return "\u00a0", true
	case 'L':
		return "\u2028", true
	case 'P':
		return "\u2029", true
	}
	return "", false
}

// escape reads a backslash escape at pos.
func (p *parser) escape(b *strings.Builder) error {
	c := p.at(p.pos + 1)
	if s, ok := simpleEscape(c); ok {
		b.WriteString(s)
		p.pos += 2
		return nil
	}
	width := 0
	switch c {
	case 'x':
		width = 2
	case 'u':
		width = 4
	case 'U':
		width = 8
	default:
		return p.errf("unknown escape \\%c in a double-quoted scalar", c)
	}
	if p.pos+2+width > len(p.src) {
		return p.errf("a short \\%c escape", c)
	}
	v, err := strconv.ParseUint(string(p.src[p.pos+2:p.pos+2+width]), 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return p.errf("an invalid \\%c escape", c)
	}
	b.WriteRune(rune(v))
	p.pos += 2 + width
	return nil
}
