package pickle

import (
	"fmt"
	"io"
)

// ErrorKind says why a pickle was refused.
type ErrorKind uint8

const (
	// Unsafe: the pickle names a global that is not allowed, or uses an
	// opcode that would run or import code the VM does not model (INST,
	// OBJ, EXT*). Error.Global names it.
	Unsafe ErrorKind = iota + 1
	// Malformed: the opcodes do not make a pickle (a stack underflow, a
	// wrong type for an opcode, an unknown opcode, bad UTF-8).
	Malformed
	// TooLarge: a limit was reached (memo, nesting, work budget).
	TooLarge
	// Truncated: the pickle ends before STOP, or a length claims more
	// bytes than are present. It wraps io.ErrUnexpectedEOF.
	Truncated
)

var kindNames = [...]string{Unsafe: "unsafe", Malformed: "malformed", TooLarge: "too_large", Truncated: "truncated"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// An Error is a pickle the VM refused: what kind, at which byte, with which
// opcode, and for Unsafe the global or opcode refused.
type Error struct {
	Kind   ErrorKind
	Offset int    // byte offset of the opcode in the pickle
	Op     string // the opcode's name
	Global string // for Unsafe: "posix.system", or the opcode ("INST builtins.eval")
	Msg    string
}

func (e *Error) Error() string {
	s := "pickle: " + e.Kind.String()
	if e.Global != "" {
		s += fmt.Sprintf(": %s", e.Global)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s + fmt.Sprintf(" (%s at byte %d)", e.Op, e.Offset)
}

// Unwrap makes a Truncated error io.ErrUnexpectedEOF.
func (e *Error) Unwrap() error {
	if e.Kind == Truncated {
		return io.ErrUnexpectedEOF
	}
	return nil
}
