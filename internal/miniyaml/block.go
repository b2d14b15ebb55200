package miniyaml

import "strings"

// blockScalar reads a literal (|) or folded (>) scalar; parent is the
// column of the enclosing block collection. Its lines are indented as
// its first non-empty line, and at least parent+1 (libyaml's
// yaml_parser_scan_block_scalar, step for step).
func (p *parser) blockScalar(parent int) (*Node, error) {
	line, literal := p.line, p.peek() == '|'
	p.pos++
	chomp := 0 // clip; -1 strip, +1 keep
	for i := 0; i < 2; i++ {
		switch c := p.peek(); {
		case c == '-' && chomp == 0:
			chomp = -1
			p.pos++
		case c == '+' && chomp == 0:
			chomp = 1
			p.pos++
		case c >= '0' && c <= '9':
			return nil, p.errf("block scalars with an indentation digit are not supported")
		}
	}
	if !p.lineEnds() {
		return nil, p.errf("unexpected %q after a block scalar's indicator", p.peek())
	}
	for p.pos < len(p.src) && !isBreak(p.peek()) {
		p.pos++
	}
	var b strings.Builder
	done := func() (*Node, error) {
		return &Node{Kind: Scalar, Value: b.String(), Quoted: true, Line: line}, p.settle()
	}
	if p.pos >= len(p.src) {
		return done()
	}
	p.newline()

	// The leading empty lines, and the indentation.
	indent, maxIndent, trailing := 0, 0, 0
	if err := p.blockBreaks(0, &maxIndent, &trailing); err != nil {
		return nil, err
	}
	indent = max(maxIndent, parent+1, 1)

	leadingBreak, leadingBlank := false, false
	for p.col() == indent && p.pos < len(p.src) {
		trailingBlank := isBlank(p.peek())
		if !literal && leadingBreak && !leadingBlank && !trailingBlank {
			if trailing == 0 {
				b.WriteByte(' ')
			}
		} else if leadingBreak {
			b.WriteByte('\n')
		}
		leadingBreak = false
		b.WriteString(strings.Repeat("\n", trailing))
		trailing = 0
		leadingBlank = trailingBlank
		start := p.pos
		for p.pos < len(p.src) && !isBreak(p.peek()) {
			p.pos++
		}
		b.Write(p.src[start:p.pos])
		if p.pos >= len(p.src) {
			break
		}
		leadingBreak = true
		p.newline()
		if err := p.blockBreaks(indent, &maxIndent, &trailing); err != nil {
			return nil, err
		}
	}
	if chomp != -1 && leadingBreak {
		b.WriteByte('\n')
	}
	if chomp == 1 {
		b.WriteString(strings.Repeat("\n", trailing))
	}
	return done()
}

// blockBreaks eats indentation (up to indent; all of it while indent is
// 0, not known yet) and empty lines, counting them.
func (p *parser) blockBreaks(indent int, maxIndent, breaks *int) error {
	for {
		for (indent == 0 || p.col() < indent) && p.peek() == ' ' {
			p.pos++
		}
		*maxIndent = max(*maxIndent, p.col())
		if (indent == 0 || p.col() < indent) && p.peek() == '\t' {
			return p.errf("a tab in a block scalar's indentation")
		}
		if !isBreak(p.peek()) {
			return nil
		}
		*breaks++
		p.newline()
	}
}
