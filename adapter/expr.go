package adapter

import (
	"fmt"
	"math"
	"strconv"
)

// An expr is an integer expression over config values: integers, names of
// config.json fields, and + - * / with the usual precedence. Arithmetic is
// on int64 and checked: a result that does not fit is an error, never a
// wrapped value, since a config.json is input like any other.
type expr struct {
	text   string
	tokens []string
}

func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func parseExpr(s string) (*expr, error) {
	e := &expr{text: s}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '+' || c == '-' || c == '*' || c == '/':
			e.tokens = append(e.tokens, s[i:i+1])
			i++
		case isNameByte(c):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			tok := s[i:j]
			if '0' <= c && c <= '9' {
				if _, err := strconv.ParseInt(tok, 10, 64); err != nil {
					return nil, fmt.Errorf("expression %q: %s is not an int64", s, tok)
				}
			}
			e.tokens = append(e.tokens, tok)
			i = j
		default:
			return nil, fmt.Errorf("expression %q: unexpected %q", s, s[i:])
		}
	}
	if _, err := e.eval(nil, true); err != nil {
		return nil, err
	}
	return e, nil
}

// eval computes the expression: * and / before + and -, left to right;
// a division must be exact. With syntaxOnly, names count as 1 and only the
// form is checked.
func (e *expr) eval(env Env, syntaxOnly bool) (int64, error) {
	pos := 0
	operand := func() (int64, error) {
		if pos >= len(e.tokens) {
			return 0, fmt.Errorf("expression %q ends early", e.text)
		}
		t := e.tokens[pos]
		pos++
		switch c := t[0]; {
		case '0' <= c && c <= '9':
			return strconv.ParseInt(t, 10, 64) // checked by parseExpr
		case !isNameByte(c):
			return 0, fmt.Errorf("expression %q: unexpected %s", e.text, t)
		case syntaxOnly:
			return 1, nil
		}
		v, ok := env.Get(t)
		if !ok {
			return 0, fmt.Errorf("config.json has no %s", t)
		}
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("config.json %s is %d, too large", t, v)
		}
		return int64(v), nil
	}
	overflow := func(a int64, op string, b int64) error {
		return fmt.Errorf("expression %s: %d %s %d overflows", e.text, a, op, b)
	}
	term := func() (int64, error) {
		v, err := operand()
		for err == nil && pos < len(e.tokens) && (e.tokens[pos] == "*" || e.tokens[pos] == "/") {
			op := e.tokens[pos]
			pos++
			var w int64
			if w, err = operand(); err != nil || syntaxOnly {
				continue
			}
			switch {
			case op == "*":
				p, ok := mul64(v, w)
				if !ok {
					return 0, overflow(v, op, w)
				}
				v = p
			case w == 0 || v%w != 0:
				err = fmt.Errorf("expression %s: %d / %d is not a whole number", e.text, v, w)
			case w == -1 && v == math.MinInt64:
				err = overflow(v, op, w)
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
		ok := true
		switch op {
		case "+":
			v, ok = add64(v, w)
		case "-":
			v, ok = sub64(v, w)
		default:
			return 0, fmt.Errorf("expression %q: unexpected %s", e.text, op)
		}
		if !ok {
			return 0, overflow(v, op, w)
		}
	}
	return v, err
}

func add64(a, b int64) (int64, bool) {
	if b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b {
		return a, false
	}
	return a + b, true
}

func sub64(a, b int64) (int64, bool) {
	if b < 0 && a > math.MaxInt64+b || b > 0 && a < math.MinInt64+b {
		return a, false
	}
	return a - b, true
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}
