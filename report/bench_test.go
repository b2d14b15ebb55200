package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// bigDiff is a diff --values of a Qwen3-30B-A3B-shaped pair (48 layers,
// 128 experts: 18,867 tensors) exported in F32: a dtype finding and
// statistics per tensor, and a value mismatch on every expert of one layer.
func bigDiff() *verify.Report {
	var fs []verify.Finding
	v := &verify.ValueReport{}
	add := func(key string, rel float64) {
		fs = append(fs, verify.Finding{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Key: key,
			Message: "published BF16, exported F32", Published: safetensors.BF16, Exported: safetensors.F32})
		v.Tensors = append(v.Tensors, verify.TensorStats{Key: key, Published: safetensors.BF16, Exported: safetensors.F32,
			Elements: 1 << 20, RelL2: verify.Float(rel), Cosine: 1, MaxAbsDiff: verify.Float(rel / 10), MaxAt: []uint64{1, 2}})
		v.Compared++
	}
	add("model.embed_tokens.weight", 1e-4)
	add("lm_head.weight", 1e-4)
	add("model.norm.weight", 1e-5)
	for l := range 48 {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, k := range []string{"input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj",
			"self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm", "mlp.gate"} {
			add(p+k+".weight", 1e-5*float64(l+1))
		}
		for e := range 128 {
			for _, k := range []string{"gate_proj", "up_proj", "down_proj"} {
				key := fmt.Sprintf("%smlp.experts.%d.%s.weight", p, e, k)
				add(key, 1e-4)
				if l == 7 {
					fs = append(fs, verify.Finding{Code: verify.CodeValueMismatch, Severity: verify.Error, Key: key,
						Message: "12 of 1,048,576 elements outside rtol 0.001"})
				}
			}
		}
	}
	r := verify.NewReport("diff", verify.Error, []verify.Input{{Side: verify.Published, Path: "p"}, {Side: verify.Exported, Path: "e"}}, fs)
	r.Values = v
	return r
}

// BenchmarkRender renders the 18,867-tensor diff in each format.
func BenchmarkRender(b *testing.B) {
	r := bigDiff()
	for _, f := range Formats() {
		b.Run(f, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Write(io.Discard, f, r, goldenOptions); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
