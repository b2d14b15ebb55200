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
	pub, exp := adapter.Choose(
		adapter.Side{Tensors: published, Candidates: adapter.Candidates(published, "qwen3", nil, nil)},
		adapter.Side{Tensors: exported, Candidates: adapter.Candidates(exported, "qwen3", nil, nil),
			MaxTensors: 2*len(published) + 1024},
		nil)
	fmt.Println(pub.Adapter, "/", exp.Adapter)
	// Output: hf / compile,torchtitan-hf
}

func ExampleChain_ApplyLimit() {
	// A hostile header: a stack of 65536 experts that holds no bytes.
	physical := []safetensors.TensorInfo{{Name: "layers.0.moe.experts.w1", DType: safetensors.BF16, Shape: []uint64{65536, 0, 8}}}
	chain, err := (&adapter.Registry{}).ParseChain("torchtitan-qwen3")
	if err != nil {
		panic(err)
	}
	view := chain.ApplyLimit(physical, nil, 1024)
	fmt.Println(len(view.Tensors), view.Truncated)
	fmt.Println(view.Errors[0].Message)
	// Output:
	// 0 true
	// the view would hold more than 1024 logical tensors, its limit; stopped here: this tensor and the 0 after it are left out
}

func ExampleCompileGlob() {
	g := adapter.CompileGlob("model.layers.*.self_attn.?_proj.*")
	for _, name := range []string{
		"model.layers.0.self_attn.q_proj.weight",
		"model.layers.12.self_attn.o_proj.bias",
		"model.layers.0.mlp.up_proj.weight",
	} {
		fmt.Println(g.Match(name), name)
	}
	// Output:
	// true model.layers.0.self_attn.q_proj.weight
	// true model.layers.12.self_attn.o_proj.bias
	// false model.layers.0.mlp.up_proj.weight
}

func ExampleCandidates() {
	// A naming scheme of one's own: the file says auto may try it for qwen3.
	student, err := adapter.Parse("student.adapter", `
name   student
doc    distilled student checkpoints
family qwen3
auto   structural
strip-prefix student.
`)
	if err != nil {
		panic(err)
	}
	exported := []safetensors.TensorInfo{
		{Name: "module.student.model.norm.weight", DType: safetensors.BF16, Shape: []uint64{1}, DataOffsets: [2]uint64{0, 2}},
	}
	for _, c := range adapter.Candidates(exported, "qwen3", []*adapter.Adapter{student}, nil) {
		fmt.Println(c.Name())
	}
	// Output:
	// ddp
	// ddp,student
}

// A preset in stages: torchtitan's Llama 4 joins its w1 and w3 expert
// stacks, then reads the join transposed as HF's gate_up_proj [E, D, 2F].
func ExampleParse_transposeInStages() {
	a, err := adapter.Parse("llama4.adapter", `
name llama4
concat layers.{i}.w1+layers.{i}.w3  layers.{i}.w13  dim=1
then
transpose layers.{i}.w13  model.layers.{i}.gate_up_proj
`)
	if err != nil {
		panic(err)
	}
	// w1 and w3: [E=2, F=3, D=4], F32.
	physical := []safetensors.TensorInfo{
		{Name: "layers.0.w1", DType: safetensors.F32, Shape: []uint64{2, 3, 4}, DataOffsets: [2]uint64{0, 96}},
		{Name: "layers.0.w3", DType: safetensors.F32, Shape: []uint64{2, 3, 4}, DataOffsets: [2]uint64{96, 192}},
	}
	t := adapter.Chain{a}.Apply(physical, nil).Tensors[0]
	fmt.Println(t.Name, safetensors.FormatShape(t.Shape), t.Transposed, t.Source)
	fmt.Println(t.Segments)
	// Output:
	// model.layers.0.gate_up_proj [2, 4, 6] true layers.0.w1+layers.0.w3.mT
	// [{0 0 48} {1 0 48} {0 48 48} {1 48 48}]
}

// llama.cpp splits gpt-oss's gate_up_proj, whose rows alternate gate and
// up, into ffn_gate_exps and ffn_up_exps: concat every=1 takes a row of
// each in turn, and the joined tensor keeps both whole.
func ExampleParse_interleave() {
	a, err := adapter.Parse("gpt-oss.adapter", `
name gpt-oss
concat blk.{i}.ffn_gate_exps.weight+blk.{i}.ffn_up_exps.weight  gate_up.{i}  dim=1 every=1
then
transpose gate_up.{i}  model.layers.{i}.mlp.experts.gate_up_proj
`)
	if err != nil {
		panic(err)
	}
	// [E=2, ff=3, H=4], F32.
	physical := []safetensors.TensorInfo{
		{Name: "blk.0.ffn_gate_exps.weight", DType: safetensors.F32, Shape: []uint64{2, 3, 4}, DataOffsets: [2]uint64{0, 96}},
		{Name: "blk.0.ffn_up_exps.weight", DType: safetensors.F32, Shape: []uint64{2, 3, 4}, DataOffsets: [2]uint64{96, 192}},
	}
	t := adapter.Chain{a}.Apply(physical, nil).Tensors[0]
	fmt.Println(t.Name, safetensors.FormatShape(t.Shape), t.Transposed, t.Interleave)
	fmt.Println(t.Segments)
	// Output:
	// model.layers.0.mlp.experts.gate_up_proj [2, 4, 6] true [16 16]
	// [{0 0 96} {1 0 96}]
}

// llama.cpp splits DeepSeek's kv_b_proj per head into attn_k_b, the key
// rows transposed, and attn_v_b: concat joins the two along their rows,
// each head's key rows a tile read transposed, and flatten merges the
// heads into the rows.
func ExampleParse_tiles() {
	a, err := adapter.Parse("deepseek.adapter", `
name deepseek
transpose blk.{i}.attn_k_b.weight  k.{i}
then
concat k.{i}+blk.{i}.attn_v_b.weight  heads.{i}  dim=1
then
flatten heads.{i}  model.layers.{i}.self_attn.kv_b_proj.weight
`)
	if err != nil {
		panic(err)
	}
	// attn_k_b [H=2, rank=4, nope=3], attn_v_b [H=2, v=2, rank=4], F32.
	physical := []safetensors.TensorInfo{
		{Name: "blk.0.attn_k_b.weight", DType: safetensors.F32, Shape: []uint64{2, 4, 3}, DataOffsets: [2]uint64{0, 96}},
		{Name: "blk.0.attn_v_b.weight", DType: safetensors.F32, Shape: []uint64{2, 2, 4}, DataOffsets: [2]uint64{96, 160}},
	}
	t := adapter.Chain{a}.Apply(physical, nil).Tensors[0]
	fmt.Println(t.Name, safetensors.FormatShape(t.Shape), t.Transposed)
	fmt.Println(t.Segments)
	// Output:
	// model.layers.0.self_attn.kv_b_proj.weight [10, 4] false
	// [{0 0 48 transposed} {1 0 32} {0 48 48 transposed} {1 32 32}]
}
