package adapter_test

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func ExampleParse() {
	a, err := adapter.Parse("student.adapter", `
name student
doc  distilled student checkpoints
unstack layers.{i}.experts.w1  model.layers.{i}.mlp.experts.{e}.gate_proj.weight
`)
	if err != nil {
		panic(err)
	}
	// A [2, 3, 4] stack of two experts, F32.
	physical := []safetensors.TensorInfo{{Name: "layers.0.experts.w1", DType: safetensors.F32,
		Shape: []uint64{2, 3, 4}, DataOffsets: [2]uint64{0, 96}}}
	view := adapter.Chain{a}.Apply(physical, nil)
	for _, t := range view.Tensors {
		fmt.Println(t.Name, safetensors.FormatShape(t.Shape), t.Source, t.Segments)
	}
	// Output:
	// model.layers.0.mlp.experts.0.gate_proj.weight [3, 4] layers.0.experts.w1[0] [{0 0 48}]
	// model.layers.0.mlp.experts.1.gate_proj.weight [3, 4] layers.0.experts.w1[1] [{0 48 48}]
}

func ExampleChoose() {
	infos := func(names ...string) []safetensors.TensorInfo {
		out := make([]safetensors.TensorInfo, len(names))
		for i, n := range names {
			out[i] = safetensors.TensorInfo{Name: n, DType: safetensors.BF16, Shape: []uint64{1}, DataOffsets: [2]uint64{0, 2}}
		}
		return out
	}
	published := infos("model.embed_tokens.weight", "model.norm.weight")
	exported := infos("_orig_mod.model.model.embed_tokens.weight", "_orig_mod.model.model.norm.weight", "_orig_mod.model.lm_head.weight")
	pub, exp := adapter.Choose(published, exported,
		adapter.Candidates(published, "qwen3", nil, nil), adapter.Candidates(exported, "qwen3", nil, nil), nil)
	fmt.Println(pub.Adapter, "/", exp.Adapter)
	// Output: hf / compile,torchtitan-hf
}
