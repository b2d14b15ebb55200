package verify

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// stepperOf is the steps of a codec (see values.Stepper): the codec's own
// when it implements Stepper, else those verify knows for it, else nil (a
// codec judged by no encoding bound).
func stepperOf(c quant.Codec) values.Stepper {
	if s, ok := c.(values.Stepper); ok {
		return s
	}
	if _, ok := c.(quant.ScaledFP8); ok {
		return scaledFP8Steps{}
	}
	return nil
}

// scaledFP8Steps are quant.ScaledFP8's steps: the spacing of the E4M3 grid
// at each stored value (2^(e−10) for exponent field e ≥ 1, 2^−9 for the
// subnormals; ml_dtypes' float8_e4m3fn: 4 exponent bits of bias 7, 3
// mantissa bits), times the tensor's scale. Round to nearest leaves the
// source within half of it; at a binade's lower edge the grid below is
// finer, so the spacing above bounds both sides.
type scaledFP8Steps struct{}

func (scaledFP8Steps) Steps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if err := quant.CheckRange(quant.ScaledFP8{}.Tile(), d, r0, r1); err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	if len(parts) != 2 || uint64(len(parts[0])) < n || len(parts[1]) < 4 || uint64(len(dst)) < n {
		return fmt.Errorf("%s steps: short parts or output for %d values", quant.ScaledFP8{}, n)
	}
	scale := math.Abs(float64(math.Float32frombits(binary.LittleEndian.Uint32(parts[1]))))
	for i, b := range parts[0][:n] {
		e := int(b>>3) & 0xF
		dst[i] = float32(math.Ldexp(scale, max(e, 1)-10))
	}
	return nil
}
