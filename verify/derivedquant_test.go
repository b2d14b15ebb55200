package verify

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/quantfixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestExpectDerivedQuantized: a quantized fine-tune against its BF16
// source under --expect derived is judged by the drift bound plus the
// encoding's (DESIGN.md, "Verdicts on values"). The fine-tune drifts q_proj
// close to the default drift bound, so that int4's own noise on top of it
// would break the bound alone; the encoding's share keeps it. A scale ×2,
// another layer's weight and a re-initialized weight still fail.
func TestExpectDerivedQuantized(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	q, k := bf16Weights(qProj, 2, 40, 64), bf16Weights(kProj, 3, 40, 64)
	src := []fixture.Tensor{norm, q, k}
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	gptq := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 32, "checkpoint_format": "gptq_v2"}}
	fp8 := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "fp8", "weight_block_size": []int{16, 16}}}
	tunedNorm := fixture.MoveULPs(norm, 4)
	trained := func(x fixture.Tensor, rel float64) fixture.Tensor {
		return fixture.Perturb(x, safetensors.BF16, rel, 5)
	}
	asName := func(x fixture.Tensor, name string) fixture.Tensor { x.Name = name; return x }
	int4 := func(qw, kw fixture.Tensor, mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{tunedNorm}, gptqV2(32, mult).Quantize(qw)...)
		return append(out, gptqV2(32, 1).Quantize(kw)...)
	}
	block := func(qw, kw fixture.Tensor, mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{tunedNorm}, quantfixture.BlockFP8{Rows: 16, Cols: 16, Mult: mult}.Quantize(qw)...)
		return append(out, quantfixture.BlockFP8{Rows: 16, Cols: 16, Mult: 1}.Quantize(kw)...)
	}
	// rel 0.42 moves q_proj by relative L2 ≈ 0.24: within the default
	// drift bound in BF16, beyond it with int4's noise.
	const near = 0.42
	for _, c := range []struct {
		name   string
		cfg    map[string]any
		export []fixture.Tensor
		want   []string
		// beyond: q_proj's relative L2 is beyond the drift bound alone.
		beyond bool
	}{
		{"int4 fine-tune near the drift bound", gptq, int4(trained(q, near), trained(k, 0.01), 1), nil, true},
		{"int4 scale x2", gptq, int4(trained(q, 0.01), trained(k, 0.01), 2), []string{"error drift_excessive " + qProj}, false},
		{"int4 another layer's weight", gptq, int4(asName(trained(k, 0.01), qProj), trained(k, 0.01), 1), []string{"error reinitialized " + qProj}, false},
		{"int4 re-initialized", gptq, int4(asName(bf16Weights("x", 77, 40, 64), qProj), trained(k, 0.01), 1), []string{"error reinitialized " + qProj}, false},
		{"fp8 block fine-tune", fp8, block(trained(q, near), trained(k, 0.01), 1), nil, false},
		{"fp8 block scale x2", fp8, block(trained(q, 0.01), trained(k, 0.01), 2), []string{"error drift_excessive " + qProj}, false},
		{"fp8 block another layer's weight", fp8, block(asName(trained(k, 0.01), qProj), trained(k, 0.01), 1), []string{"error reinitialized " + qProj}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, c.export, c.cfg), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) != 0 {
				t.Fatalf("structure: %v", d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{Policy: ValuePolicy{Expect: ExpectDerived}})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q, want %q\n%v", got, c.want, rep.Findings)
			}
			for _, s := range rep.Tensors {
				if s.Key != qProj && s.Key != kProj {
					continue
				}
				qs := s.Quantization
				if qs == nil || qs.Bound != "statistical" || !(qs.EncodingRelL2 > 0) || float64(qs.RelL2Bound) <= DefaultDrift.MaxRelL2 {
					t.Fatalf("%s: %+v", s.Key, qs)
				}
				if s.Key == qProj && c.beyond && (float64(s.RelL2) <= DefaultDrift.MaxRelL2 || !qs.Within) {
					t.Errorf("%s: relative L2 %v within the drift bound alone, or not within (%+v): the case does not test the encoding's share", s.Key, s.RelL2, qs)
				}
			}
		})
	}
}

func TestPlusEncoding(t *testing.T) {
	b := DefaultDrift
	if got := b.plusEncoding(0); got != b {
		t.Errorf("plusEncoding(0) = %v", got)
	}
	w := b.plusEncoding(0.1)
	if w.MaxRelL2 != 0.35 || !(w.MinCosine < b.MinCosine) || !(w.MinCosine > 0.9) {
		t.Errorf("plusEncoding(0.1) = %v", w)
	}
	if w := b.plusEncoding(5); w.MinCosine < -1 || w.MinCosine > 0 {
		t.Errorf("plusEncoding(5) = %v", w)
	}
}
