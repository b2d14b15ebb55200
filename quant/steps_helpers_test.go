package quant_test

import (
	"math"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
)

// Test-side helpers of the steps tests: a round-to-nearest quantizer over
// any code table, and the check that a decoded value lies within half its
// step of the source its quantizer was given.

type stepper interface {
	quant.Codec
	Steps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
}

// asStepper is c's Steps, failing the test when it has none.
func asStepper(t *testing.T, c quant.Codec) stepper {
	t.Helper()
	s, ok := c.(stepper)
	if !ok {
		t.Fatalf("%s states no steps", c)
	}
	return s
}

// nearest is the code of n whose value (code → value) is nearest x,
// searched over every code: the definition of round to nearest.
func nearest(x float32, n int, value func(int) float32) int {
	best, bd := 0, math.Inf(1)
	for q := range n {
		v := value(q)
		if v != v {
			continue
		}
		if dd := math.Abs(float64(x - v)); dd < bd {
			best, bd = q, dd
		}
	}
	return best
}

// stepsOf is c's steps of all rows of d.
func stepsOf(t *testing.T, c quant.Codec, d quant.Dims, parts [][]byte) []float32 {
	t.Helper()
	dst := make([]float32, d.Rows*d.Cols)
	if err := asStepper(t, c).Steps(d, 0, d.Rows, parts, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkWithinHalfStep checks that every value c decodes from parts lies
// within half its step (and the engine's margin of 1/16) of src, the
// values the test-side quantizer was given.
func checkWithinHalfStep(t *testing.T, c quant.Codec, d quant.Dims, parts [][]byte, src []float32) {
	t.Helper()
	got := make([]float32, d.Rows*d.Cols)
	if err := c.Decode(d, 0, d.Rows, parts, got); err != nil {
		t.Fatal(err)
	}
	steps := stepsOf(t, c, d, parts)
	for i, v := range got {
		s := steps[i]
		if s < 0 || math.IsInf(float64(s), 0) || s != s {
			t.Fatalf("%s: step %d = %v", c, i, s)
		}
		if dd := math.Abs(float64(v - src[i])); dd > (1+1.0/16)*float64(s)/2 {
			t.Fatalf("%s: value %d = %v, source %v: |Δ| %v beyond half the step %v", c, i, v, src[i], dd, s)
		}
	}
	if d.Rows > 0 {
		if err := asStepper(t, c).Steps(d, 0, d.Rows, parts, steps[:0]); err == nil && d.Cols > 0 {
			t.Errorf("%s: short output: no error", c)
		}
	}
}
