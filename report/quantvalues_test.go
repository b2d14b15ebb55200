package report

import (
	"math"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

// TestQuantRows: each weight compared through its codec is one row of the
// quantization error, with its bound and verdict; plain tensors are none.
func TestQuantRows(t *testing.T) {
	nan := verify.Float(math.NaN())
	tensors := []verify.TensorStats{
		{Key: "a.weight", RelL2: 0.02, Encoding: "F8_E4M3 per-tensor",
			Quantization: &verify.QuantStats{Bound: "elementwise", MaxStepRatio: 0.9, NoiseRelL2: 0.025, Within: true}},
		{Key: "b.weight", RelL2: 0.3, Encoding: "GPTQ int4 g128",
			Quantization: &verify.QuantStats{Bound: "statistical", MaxStepRatio: 9, NoiseRelL2: 0.03, RelL2Bound: 0.09}},
		{Key: "norm.weight", RelL2: 0, MaxAbsDiff: 0, Cosine: 1, PublishedAt: nan},
	}
	rows := QuantRows(tensors)
	if len(rows) != 2 || rows[0][0] != "a.weight" || rows[0][5] != "within" || rows[1][5] != "outside" || !slices.Contains(rows[1], "rel L2 ≤ 0.09") {
		t.Errorf("%q", rows)
	}
}
