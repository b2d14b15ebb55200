package quant

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by every error of an Unsupported codec.
var ErrUnsupported = errors.New("encoding not decoded yet")

// Unsupported is the codec of an encoding this version binds but does not
// decode: it says which scheme and which encoding ("gptq int4"), and lists
// the parts the checkpoint holds, so that a view can fold a weight's
// companions into one logical tensor and a comparison can say what it left
// uncompared. Its Sizes, Spans and Decode only return ErrUnsupported; it is
// the one codec outside the quanttest suite, which tests decoding.
type Unsupported struct {
	// Scheme is the quant_method ("gptq"); Encoding says which of the
	// scheme's layouts ("int4", "nf4", "block fp8").
	Scheme, Encoding string
	// Layout is the parts, data first, with the dtypes the checkpoint
	// stores them in (0 for a part it lacks).
	Layout []Part
}

func (u *Unsupported) String() string {
	name := u.Scheme
	if u.Encoding != "" {
		name += " " + u.Encoding
	}
	return name + " (not decoded yet)"
}

func (u *Unsupported) Parts() []Part { return u.Layout }
func (u *Unsupported) Tile() Tile    { return Tile{Rows: 1, Cols: 1} }

func (u *Unsupported) Sizes(Dims, []uint64) error { return fmt.Errorf("%s: %w", u, ErrUnsupported) }

func (u *Unsupported) Spans(_ Dims, _, _ uint64, dst []Span) ([]Span, error) {
	return dst, fmt.Errorf("%s: %w", u, ErrUnsupported)
}

func (u *Unsupported) Decode(Dims, uint64, uint64, [][]byte, []float32) error {
	return fmt.Errorf("%s: %w", u, ErrUnsupported)
}
