package miniyaml

import (
	"fmt"
	"unicode/utf8"
)

// maxDepth bounds nesting: a configuration is a few levels deep.
const maxDepth = 64

// maxKey bounds a block mapping's key, as YAML's simple keys are (1024).
const maxKey = 1024

// Parse reads one YAML document. An empty document (nothing, comments
// or a lone ---) is a nil node.
func Parse(data []byte) (*Node, error) {
	if err := checkChars(data); err != nil {
		return nil, err
	}
	p := &parser{src: data, line: 1}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.pos, p.lineStart = 3, 3
	}
	if err := p.settle(); err != nil {
		return nil, err
	}
	if p.indent < 0 && p.marker == '-' {
		p.marker = 0
		if err := p.nextLine(); err != nil { // the rest of the --- line
			return nil, err
		}
	}
	var root *Node
	if p.indent >= 0 {
		n, err := p.node(-1)
		if err != nil {
			return nil, err
		}
		root = n
	}
	if p.indent >= 0 {
		return nil, p.errf("unexpected content, less indented than the document")
	}
	if p.marker == '.' {
		p.marker = 0
		if err := p.nextLine(); err != nil {
			return nil, err
		}
	}
	if p.marker == '-' || p.indent >= 0 {
		return nil, p.errf("more than one YAML document")
	}
	return root, nil
}

// checkChars refuses what YAML refuses in a stream: invalid UTF-8 and
// control characters other than tab and line breaks.
func checkChars(b []byte) error {
	line := 1
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return &Error{line, "invalid UTF-8"}
		case r == '\n':
			line++
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			return &Error{line, fmt.Sprintf("the line separator %U is not supported (use a line feed)", r)}
		case r == '\t' || r == '\r' || r == 0xFEFF && i == 0:
		case r < 0x20 || r >= 0x7F && r < 0xA0 || r >= 0xD800 && r < 0xE000 || r == 0xFFFE || r == 0xFFFF || r == 0xFEFF:
			return &Error{line, fmt.Sprintf("control character %U is not allowed", r)}
		}
		i += n
	}
	return nil
}

type parser struct {
	src       []byte
	pos       int
	line      int
	lineStart int
	// indent is the column of the current content line's first
	// character, where pos is after settle; -1 at the end of the
	// document (the input's end, or a marker).
	indent int
	marker byte // '-' or '.' when a document marker ended it
	depth  int
}

func (p *parser) errf(format string, args ...any) error {
	return &Error{p.line, fmt.Sprintf(format, args...)}
}

func (p *parser) col() int { return p.pos - p.lineStart }

func (p *parser) at(i int) byte {
	if i < len(p.src) {
		return p.src[i]
	}
	return 0
}

func (p *parser) peek() byte { return p.at(p.pos) }

func isBreak(c byte) bool { return c == '\n' || c == '\r' }

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// isSpaceOrEnd is true for a blank, a line break or the input's end.
func isSpaceOrEnd(c byte) bool { return c == 0 || isBlank(c) || isBreak(c) }

// newline consumes a line break at pos.
func (p *parser) newline() {
	if p.peek() == '\r' && p.at(p.pos+1) == '\n' {
		p.pos++
	}
	p.pos++
	p.line++
	p.lineStart = p.pos
}

// skipIndent skips the spaces where YAML's block context allows a key to
// start (a line's start, after "- " or ": "): a tab there is an error, as
// in libyaml, even on a blank line.
func (p *parser) skipIndent() error {
	for isBlank(p.peek()) {
		if p.peek() == '\t' {
			return p.errf("a tab where YAML wants spaces (indent with spaces)")
		}
		p.pos++
	}
	return nil
}

func (p *parser) skipBlanks() {
	for isBlank(p.peek()) {
		p.pos++
	}
}

// atComment is true at a # that starts a comment: at a line's start or
// after a blank.
func (p *parser) atComment() bool {
	return p.peek() == '#' && (p.pos == p.lineStart || isBlank(p.at(p.pos-1)))
}

// lineEnds skips blanks and reports whether only a comment or nothing
// is left on the line.
func (p *parser) lineEnds() bool {
	p.skipBlanks()
	c := p.peek()
	return c == 0 || isBreak(c) || p.atComment()
}

// nextLine consumes the rest of the line, which must hold nothing or a
// comment, and settles on the next content line.
func (p *parser) nextLine() error {
	if !p.lineEnds() {
		return p.errf("unexpected %q after the value", p.peek())
	}
	for p.pos < len(p.src) && !isBreak(p.peek()) {
		p.pos++
	}
	if p.pos < len(p.src) {
		p.newline()
	}
	return p.settle()
}

// settle skips blank and comment lines from a line's start and sets
// indent; a document marker at column 0 ends the document.
func (p *parser) settle() error {
	for {
		if p.pos >= len(p.src) {
			p.indent = -1
			return nil
		}
		p.pos = p.lineStart
		if (p.at(p.pos) == '-' || p.at(p.pos) == '.') && p.at(p.pos+1) == p.at(p.pos) && p.at(p.pos+2) == p.at(p.pos) && isSpaceOrEnd(p.at(p.pos+3)) {
			p.marker, p.indent = p.at(p.pos), -1
			p.pos += 3
			return nil
		}
		if err := p.skipIndent(); err != nil {
			return err
		}
		c := p.peek()
		if c != 0 && !isBreak(c) && !p.atComment() {
			if c == '%' && p.col() == 0 {
				return p.errf("directives (%%YAML, %%TAG) are not supported")
			}
			p.indent = p.col()
			return nil
		}
		for p.pos < len(p.src) && !isBreak(p.peek()) {
			p.pos++
		}
		if p.pos >= len(p.src) {
			p.indent = -1
			return nil
		}
		p.newline()
	}
}

// unsupported names what this package refuses at pos, or "".
func (p *parser) unsupported() string {
	switch p.peek() {
	case '&':
		return "anchors (&) are not supported"
	case '*':
		return "aliases (*) are not supported"
	case '!':
		return "tags (!) are not supported"
	case '?':
		if isSpaceOrEnd(p.at(p.pos + 1)) {
			return "explicit keys (?) are not supported"
		}
	case '@', '`':
		return fmt.Sprintf("%q cannot start a value", p.peek())
	}
	return ""
}

// node reads the block node that starts at pos (a content line's start,
// or after "- "), leaving the parser settled on the line after it.
// parent is the column of the enclosing block collection (-1 at the
// root): continuation lines must be indented past it.
func (p *parser) node(parent int) (*Node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, p.errf("nested more than %d levels", maxDepth)
	}
	defer func() { p.depth-- }()
	c := p.col()
	switch ch := p.peek(); {
	case p.unsupported() != "":
		return nil, p.errf("%s", p.unsupported())
	case ch == '-' && isSpaceOrEnd(p.at(p.pos+1)):
		return p.sequence(c)
	case ch == '[' || ch == '{':
		n, err := p.flow(parent + 1)
		if err != nil {
			return nil, err
		}
		if !p.lineEnds() {
			if p.peek() == ':' {
				return nil, p.errf("complex keys are not supported")
			}
			return nil, p.errf("unexpected %q after a flow collection", p.peek())
		}
		return n, p.nextLine()
	case ch == '|' || ch == '>':
		return p.blockScalar(parent)
	}
	if p.isKey() {
		return p.mapping(c)
	}
	n, err := p.scalar(ctxValue, parent+1)
	if err != nil {
		return nil, err
	}
	if !p.lineEnds() {
		if p.peek() == ':' {
			return nil, p.errf("mapping values are not allowed here")
		}
		return nil, p.errf("unexpected %q", p.peek())
	}
	return n, p.nextLine()
}

// isKey reports whether a block mapping's key starts at pos: a scalar on
// this line followed by ':' and a blank or the line's end.
func (p *parser) isKey() bool {
	save := *p
	defer func() { *p = save }()
	if _, err := p.scalar(ctxKey, 0); err != nil || p.line != save.line {
		return false
	}
	p.skipBlanks()
	return p.peek() == ':' && isSpaceOrEnd(p.at(p.pos+1))
}

// mapping reads a block mapping whose keys are at column c.
func (p *parser) mapping(c int) (*Node, error) {
	m := &Node{Kind: Mapping, Line: p.line}
	for {
		if !p.isKey() {
			return nil, p.errf("want a key: value pair at this indentation")
		}
		start := p.pos
		k, err := p.scalar(ctxKey, 0)
		if err != nil {
			return nil, err
		}
		if p.pos-start > maxKey {
			return nil, p.errf("a key longer than %d bytes", maxKey)
		}
		p.skipBlanks()
		p.pos++ // the ':'
		v, err := p.value(c, k.Line)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, k, v)
		switch {
		case p.indent < c:
			return m, nil
		case p.indent > c:
			return nil, p.errf("bad indentation: %d spaces, the mapping's keys have %d", p.indent, c)
		}
	}
}

// value reads a mapping value after its key's ':' (the key at column c).
func (p *parser) value(c, keyLine int) (*Node, error) {
	if err := p.skipIndent(); err != nil {
		return nil, err
	}
	if p.lineEnds() {
		if err := p.nextLine(); err != nil {
			return nil, err
		}
		switch {
		case p.indent > c:
			return p.node(c)
		case p.indent == c && p.peek() == '-' && isSpaceOrEnd(p.at(p.pos+1)):
			return p.sequence(c)
		}
		return &Node{Kind: Scalar, Null: true, Line: keyLine}, nil
	}
	if p.peek() == '-' && isSpaceOrEnd(p.at(p.pos+1)) {
		return nil, p.errf("a block sequence cannot start on its key's line")
	}
	if p.isKey() {
		return nil, p.errf("mapping values are not allowed here (a key: on its key's line)")
	}
	return p.node(c)
}

// sequence reads a block sequence whose dashes are at column c.
func (p *parser) sequence(c int) (*Node, error) {
	s := &Node{Kind: Sequence, Line: p.line}
	for {
		line := p.line
		p.pos++ // the '-'
		if err := p.skipIndent(); err != nil {
			return nil, err
		}
		var item *Node
		var err error
		if p.lineEnds() {
			if err = p.nextLine(); err != nil {
				return nil, err
			}
			if p.indent > c {
				item, err = p.node(c)
			} else {
				item = &Node{Kind: Scalar, Null: true, Line: line}
			}
		} else {
			item, err = p.node(c)
		}
		if err != nil {
			return nil, err
		}
		s.Content = append(s.Content, item)
		switch {
		case p.indent < c:
			return s, nil
		case p.indent > c:
			return nil, p.errf("bad indentation: %d spaces, the list's dashes have %d", p.indent, c)
		case p.peek() != '-' || !isSpaceOrEnd(p.at(p.pos+1)):
			return s, nil // a mapping's next key, at the list's column
		}
	}
}
