package miniyaml

// flow reads a flow sequence ([a, b]) or mapping ({k: v, k2}) at pos,
// which may span lines; a key without a value has a null one.
func (p *parser) flow(minIndent int) (*Node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, p.errf("nested more than %d levels", maxDepth)
	}
	defer func() { p.depth-- }()
	open, line := p.peek(), p.line
	p.pos++
	n := &Node{Kind: Sequence, Line: line}
	end := byte(']')
	if open == '{' {
		n.Kind, end = Mapping, '}'
	}
	for {
		if err := p.flowSpace(line); err != nil {
			return nil, err
		}
		if p.peek() == end {
			p.pos++
			return n, nil
		}
		item, err := p.flowItem(minIndent, n.Kind == Mapping)
		if err != nil {
			return nil, err
		}
		itemEnd := p.line
		if err := p.flowSpace(line); err != nil {
			return nil, err
		}
		if p.peek() == ':' && p.line != itemEnd {
			return nil, p.errf("a ':' on another line than its key")
		}
		switch {
		case n.Kind == Sequence && p.peek() == ':':
			return nil, p.errf("key: value pairs inside a flow sequence are not supported")
		case n.Kind == Sequence:
			n.Content = append(n.Content, item)
		case p.peek() == ':':
			p.pos++
			if err := p.flowSpace(line); err != nil {
				return nil, err
			}
			v := &Node{Kind: Scalar, Null: true, Line: p.line}
			if c := p.peek(); c != ',' && c != '}' {
				if v, err = p.flowItem(minIndent, false); err != nil {
					return nil, err
				}
				if err := p.flowSpace(line); err != nil {
					return nil, err
				}
			}
			n.Content = append(n.Content, item, v)
		default:
			n.Content = append(n.Content, item, &Node{Kind: Scalar, Null: true, Line: item.Line})
		}
		switch p.peek() {
		case ',':
			p.pos++
		case end:
			p.pos++
			return n, nil
		default:
			return nil, p.errf("want ',' or '%c' in the flow collection opened on line %d, not %q", end, line, p.peek())
		}
	}
}

// flowItem reads an item, key or value inside a flow collection.
func (p *parser) flowItem(minIndent int, key bool) (*Node, error) {
	switch c := p.peek(); {
	case (c == '[' || c == '{') && key:
		return nil, p.errf("complex keys are not supported")
	case c == '[' || c == '{':
		return p.flow(minIndent)
	case p.unsupported() != "":
		return nil, p.errf("%s", p.unsupported())
	}
	return p.scalar(ctxFlow, minIndent)
}

// flowSpace skips blanks, line breaks and comments inside a flow
// collection.
func (p *parser) flowSpace(opened int) error {
	for {
		c := p.peek()
		switch {
		case c == 0:
			return p.errf("the flow collection opened on line %d is not closed", opened)
		case isBlank(c):
			p.pos++
		case isBreak(c):
			p.newline()
			if p.isMarker() {
				return p.errf("a document marker inside a flow collection")
			}
		case p.atComment():
			for p.pos < len(p.src) && !isBreak(p.peek()) {
				p.pos++
			}
		default:
			return nil
		}
	}
}
