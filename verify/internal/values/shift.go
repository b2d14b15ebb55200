package values

import (
	"fmt"
	"math"
	"sync"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Shifted values: a tensor stored as its logical values minus add (an
// adapter's add= rule; llama.cpp stores Gemma's norm weights w as w+1) is
// a codec operand whose codec decodes the stored values and adds add, so
// the engine's codec path compares the logical values with no kernel of
// its own. The stored values were rounded once when the converter made
// them (w+1 to the stored dtype) and are rounded again here (to float32),
// so a shifted codec states steps: both roundings, on top of an inner
// codec's own steps.

// Shifted returns the codec that decodes what inner decodes, plus add. It
// states steps (see Stepper) when inner does, and is judged statistically
// when inner is. It hides any other method of inner: callers shift only
// codecs the engine decodes as they are (not stored transposed, not
// resolved from metadata).
func Shifted(inner quant.Codec, add float64) quant.Codec {
	s := shifted{inner: inner, add: add}
	if st, ok := inner.(Stepper); ok {
		return &shiftedStepper{shifted: s, steps: st}
	}
	return &s
}

// ShiftedPlain returns the codec of a tensor of the plain dtype d stored as
// its values minus add; ok is false when d is not a floating dtype of real
// values.
func ShiftedPlain(d safetensors.DType, add float64) (quant.Codec, bool) {
	if !d.IsFloat() || !d.Decodable() || d.Lanes() != 1 {
		return nil, false
	}
	inner, ok := quant.Plain(d)
	if !ok {
		return nil, false
	}
	return &shiftedStepper{shifted: shifted{inner: inner, add: add}, plain: d}, true
}

type shifted struct {
	inner quant.Codec
	add   float64
}

// String names the stored encoding and the shift: "F32, stored +1".
func (c *shifted) String() string { return fmt.Sprintf("%s, stored %+g", c.inner, -c.add) }

func (c *shifted) Parts() []quant.Part                      { return c.inner.Parts() }
func (c *shifted) Tile() quant.Tile                         { return c.inner.Tile() }
func (c *shifted) Sizes(d quant.Dims, sizes []uint64) error { return c.inner.Sizes(d, sizes) }

// ErrorCompensated keeps the inner codec's answer to the question package
// verify asks: whether the encoding is judged statistically.
func (c *shifted) ErrorCompensated() bool {
	ec, ok := c.inner.(interface{ ErrorCompensated() bool })
	return ok && ec.ErrorCompensated()
}

func (c *shifted) Spans(d quant.Dims, r0, r1 uint64, dst []quant.Span) ([]quant.Span, error) {
	return c.inner.Spans(d, r0, r1, dst)
}

func (c *shifted) Decode(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if err := c.inner.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols // Decode checked that dst holds them
	for i, v := range dst[:n] {
		dst[i] = float32(float64(v) + c.add)
	}
	return nil
}

// A shiftedStepper is a shifted codec that states its steps: its inner
// codec's, or for a plain dtype the spacing of the stored values (the
// converter rounded w+1 to them), plus the float32 spacing of the decoded
// value (Decode rounds stored + add to it).
type shiftedStepper struct {
	shifted
	steps Stepper // nil for a plain dtype
	plain safetensors.DType
}

// innerSteps holds blocks of inner steps between calls: the engine's blocks
// are bounded, and a Stepper allocates nothing by the weight.
var innerSteps = sync.Pool{New: func() any { return new([]float32) }}

func (c *shiftedStepper) Steps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	n := (r1 - r0) * d.Cols
	if n > uint64(len(dst)) {
		return fmt.Errorf("%s: rows [%d, %d) are %d values, the output holds %d", c, r0, r1, n, len(dst))
	}
	// The stored values, decoded by the inner codec, give both spacings;
	// an inner Stepper then says its own steps, written over them.
	if err := c.inner.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	var inner []float32
	if c.steps != nil {
		buf := innerSteps.Get().(*[]float32)
		defer innerSteps.Put(buf)
		if uint64(cap(*buf)) < n {
			*buf = make([]float32, n)
		}
		inner = (*buf)[:n]
		if err := c.steps.Steps(d, r0, r1, parts, inner); err != nil {
			return err
		}
	}
	for i, v := range dst[:n] {
		stored := float64(v)
		step := 2 * HalfULP(safetensors.F32, float64(float32(stored+c.add)))
		if inner != nil {
			step += float64(inner[i])
		} else {
			step += 2 * HalfULP(c.plain, stored)
		}
		if math.IsInf(step, 0) || math.IsNaN(step) {
			step = 0 // a non-finite value: not compared by its step
		}
		dst[i] = float32(step)
	}
	return nil
}

// IsShifted reports a codec Shifted or ShiftedPlain made.
func IsShifted(c quant.Codec) bool {
	switch c.(type) {
	case *shifted, *shiftedStepper:
		return true
	}
	return false
}
