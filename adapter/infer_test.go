package adapter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func specInfos(specs []fixture.Spec) []safetensors.TensorInfo {
	out := make([]safetensors.TensorInfo, len(specs))
	for i, s := range specs {
		out[i] = safetensors.TensorInfo{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape}
	}
	return out
}

// torchtitanNames renames HF names to torchtitan's, per expert.
func torchtitanNames(in []safetensors.TensorInfo) []safetensors.TensorInfo {
	r := strings.NewReplacer("model.layers.", "layers.", "self_attn.q_proj", "attention.wq", "self_attn.k_proj", "attention.wk",
		"self_attn.v_proj", "attention.wv", "self_attn.o_proj", "attention.wo", "mlp.experts.", "moe.experts.",
		"gate_proj", "w1", "up_proj", "w3", "down_proj", "w2", "model.embed_tokens", "tok_embeddings", "model.norm", "norm")
	out := make([]safetensors.TensorInfo, len(in))
	for i, t := range in {
		t.Name = r.Replace(t.Name)
		out[i] = t
	}
	return out
}

func TestInferWrappersByHeaders(t *testing.T) {
	pub := specInfos(fixture.Tiny.Specs())
	exp := make([]safetensors.TensorInfo, len(pub))
	for i, p := range pub {
		p.Name = "module._orig_mod." + p.Name
		exp[i] = p
	}
	inf, err := Infer(pub, exp, nil, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := Chain{mustAdapter(t, inf)}.Apply(exp, nil)
	for _, p := range pub {
		if _, ok := v.Tensor(p.Name); !ok {
			t.Errorf("%s not mapped\n%s", p.Name, inf.Text())
		}
	}
}

func mustAdapter(t *testing.T, inf *Inference) *Adapter {
	t.Helper()
	a, err := inf.Adapter()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Shape-alike templates are ambiguous without values: inference names them
// and does not guess.
func TestInferAmbiguousWithoutValues(t *testing.T) {
	pub := specInfos(fixture.Tiny.Specs())
	inf, err := Infer(pub, torchtitanNames(pub), Env{"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep := inf.Report()
	found := false
	for _, a := range rep.Ambiguities {
		if strings.Contains(a.Exported, "feed_forward") || strings.Contains(a.Exported, "w1") {
			found = true
		}
	}
	if !found || strings.Contains(inf.Text(), "rename layers.{i0}.mlp.w1") {
		t.Errorf("gate/up not reported ambiguous: %+v\n%s", rep, inf.Text())
	}
}

// A hostile name cannot write a rule, and thousands of templates stop at
// the bound.
func TestInferHostileNames(t *testing.T) {
	pub := []safetensors.TensorInfo{{Name: "a.weight", DType: safetensors.F32, Shape: []uint64{4}}}
	exp := []safetensors.TensorInfo{{Name: "x\nrename a.weight b #.weight", DType: safetensors.F32, Shape: []uint64{4}}}
	inf, err := Infer(pub, exp, nil, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAdapter(t, inf)
	if len(a.rules) != 0 {
		t.Errorf("a hostile name wrote rules:\n%s", inf.Text())
	}
	var many []safetensors.TensorInfo
	for i := range 3000 {
		many = append(many, safetensors.TensorInfo{Name: fmt.Sprintf("t%d.weight", i), DType: safetensors.F32, Shape: []uint64{4}})
	}
	if _, err := Infer(many, many, nil, InferOptions{}); err == nil || !strings.Contains(err.Error(), "name templates") {
		t.Errorf("no bound: %v", err)
	}
	// Siblings that could join into one published tensor in any order:
	// their concats are not enumerated (their cube).
	var siblings []safetensors.TensorInfo
	for i := range 1500 {
		siblings = append(siblings, safetensors.TensorInfo{Name: fmt.Sprintf("m.p%d.weight", i), DType: safetensors.F32, Shape: []uint64{4, 4}})
	}
	start := time.Now()
	fused := []safetensors.TensorInfo{{Name: "m.fused.weight", DType: safetensors.F32, Shape: []uint64{12, 4}}}
	if _, err := Infer(fused, siblings, nil, InferOptions{}); err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("shape-alike siblings: %v after %v", err, time.Since(start))
	}
	// Groups of 16 siblings (within the bound) that pair up into any of
	// many published templates: the candidate bound stops them.
	var pubs, groups []safetensors.TensorInfo
	for i := range 1200 {
		pubs = append(pubs, safetensors.TensorInfo{Name: fmt.Sprintf("f%d.w.weight", i), DType: safetensors.F32, Shape: []uint64{8, 4}})
		groups = append(groups, safetensors.TensorInfo{Name: fmt.Sprintf("g%d.p%d.weight", i/16, i%16), DType: safetensors.F32, Shape: []uint64{4, 4}})
	}
	start = time.Now()
	if _, err := Infer(pubs, groups, nil, InferOptions{}); err == nil || !strings.Contains(err.Error(), "candidate layouts") || time.Since(start) > 5*time.Second {
		t.Errorf("pairing siblings: %v after %v", err, time.Since(start))
	}
}

func FuzzInferNames(f *testing.F) {
	f.Add("model.layers.0.mlp.w1.weight", "layers.0.x#y.weight")
	f.Fuzz(func(t *testing.T, a, b string) {
		// Shapes that make every kind of candidate: renames, a split of a
		// fused [4, 2], its transpose, a concat of siblings.
		pub := []safetensors.TensorInfo{{Name: a, DType: safetensors.F32, Shape: []uint64{2, 2}}, {Name: a + ".1", DType: safetensors.F32, Shape: []uint64{2}},
			{Name: a + ".x.fused", DType: safetensors.F32, Shape: []uint64{4, 2}}, {Name: a + ".y.q", DType: safetensors.F32, Shape: []uint64{2, 2}}}
		exp := []safetensors.TensorInfo{{Name: b, DType: safetensors.F32, Shape: []uint64{2, 2}}, {Name: b + ".1", DType: safetensors.F32, Shape: []uint64{2}},
			{Name: b + ".x.q", DType: safetensors.F32, Shape: []uint64{2, 2}}, {Name: b + ".x.k", DType: safetensors.F32, Shape: []uint64{2, 2}},
			{Name: b + ".y.qk", DType: safetensors.F32, Shape: []uint64{2, 4}}}
		inf, err := Infer(pub, exp, nil, InferOptions{})
		if err != nil {
			return
		}
		if _, err := inf.Adapter(); err != nil {
			t.Fatalf("inferred adapter does not parse: %v\n%s", err, inf.Text())
		}
		// Settled by samples that fit each candidate differently.
		samples := inf.Samples()
		for i := range samples {
			n := samples[i].Rows * samples[i].Cols
			samples[i].Pub, samples[i].Exp = make([]float64, n), make([]float64, n)
			for j := range n {
				samples[i].Pub[j], samples[i].Exp[j] = float64(j+1), float64(uint64(j+1)*uint64(i%3+1))
			}
		}
		inf.Settle(samples)
		if _, err := inf.Adapter(); err != nil {
			t.Fatalf("settled adapter does not parse: %v\n%s", err, inf.Text())
		}
	})
}

func benchInfer(b *testing.B, q fixture.Qwen3) {
	pub := specInfos(q.Specs())
	exp := torchtitanNames(pub)
	env := Env{"num_attention_heads": uint64(q.Heads), "num_key_value_heads": uint64(q.KVHeads), "head_dim": uint64(q.HeadDim)}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		inf, err := Infer(pub, exp, env, InferOptions{})
		if err != nil {
			b.Fatal(err)
		}
		samples := inf.Samples()
		for i := range samples {
			n := samples[i].Rows * samples[i].Cols
			samples[i].Pub, samples[i].Exp = make([]float64, n), make([]float64, n)
		}
		inf.Settle(samples)
		a, err := inf.Adapter()
		if err != nil {
			b.Fatal(err)
		}
		Chain{a}.Apply(exp, env)
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/infer")
}

// BenchmarkInferMoE is inference (settled by samples, the adapter written
// and applied) on the Qwen3-30B-A3B shape, 18,867
// tensors a side, renamed to torchtitan's (target: 200 ms).
func BenchmarkInferMoE(b *testing.B) { benchInfer(b, fixture.Qwen3MoE30B) }

// BenchmarkInferDense is the 0.6B dense pair (target: 100 ms).
func BenchmarkInferDense(b *testing.B) { benchInfer(b, fixture.Qwen3Dense06B) }
