package adapter

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func mustChain(t *testing.T, spec string) Chain {
	t.Helper()
	c, err := (&Registry{}).ParseChain(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func infos(names ...string) []safetensors.TensorInfo {
	out := make([]safetensors.TensorInfo, len(names))
	var off uint64
	for i, n := range names {
		out[i] = safetensors.TensorInfo{Name: n, DType: safetensors.F32, Shape: []uint64{2}, DataOffsets: [2]uint64{off, off + 8}}
		off += 8
	}
	return out
}

func names(v *View) []string {
	var out []string
	for _, t := range v.Tensors {
		out = append(out, t.Name)
	}
	return out
}

func TestPresetsRename(t *testing.T) {
	tests := []struct {
		chain, in, want string
	}{
		{"hf", "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"},
		{"torchtitan-hf", "model.model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"},
		{"torchtitan-hf", "model.lm_head.weight", "lm_head.weight"},
		{"torchtitan-hf", "lm_head.weight", "lm_head.weight"},
		{"ddp", "module.model.norm.weight", "model.norm.weight"},
		{"ddp", "model.module_list.0.weight", "model.module_list.0.weight"},
		{"compile", "model._orig_mod.layers.0.weight", "model.layers.0.weight"},
		{"fsdp", "model.layers.0._fsdp_wrapped_module._checkpoint_wrapped_module.mlp.weight", "model.layers.0.mlp.weight"},
		// Wrappers apply first wherever the chain names them (issue 19).
		{"torchtitan-hf,compile", "_orig_mod.model.model.norm.weight", "model.norm.weight"},
		{"compile,torchtitan-hf", "_orig_mod.model.model.norm.weight", "model.norm.weight"},
		{"torchtitan-hf,compile", "model._orig_mod.model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"},
		{"torchtitan-hf,ddp,compile", "module.model._orig_mod.model.lm_head.weight", "lm_head.weight"},
		{"torchtitan-qwen3", "layers.3.attention.wq.weight", "model.layers.3.self_attn.q_proj.weight"},
		{"torchtitan-qwen3", "layers.3.attention.qkv_linear.wk.weight", "model.layers.3.self_attn.k_proj.weight"},
		{"torchtitan-qwen3", "output.weight", "lm_head.weight"},
		{"torchtitan-qwen3", "lm_head.weight", "lm_head.weight"},
		{"megatron", "decoder.layers.2.mlp.linear_fc2.weight", "model.layers.2.mlp.down_proj.weight"},
	}
	for _, tt := range tests {
		v := mustChain(t, tt.chain).Apply(infos(tt.in), nil)
		if got := names(v); len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s(%s) = %v, want %s", tt.chain, tt.in, got, tt.want)
		}
	}
	if c := mustChain(t, "torchtitan-hf,compile,hf,ddp"); c.Name() != "compile,ddp,torchtitan-hf" {
		t.Errorf("chain %s: want the wrappers first, in the order written", c.Name())
	}
	if _, err := (&Registry{}).ParseChain("torchtitan-hf,nope"); err == nil {
		t.Error("an unknown preset must be an error")
	}
}

func TestCustom(t *testing.T) {
	r, err := Rename(`^backbone\.(.*)$=model.$1`)
	if err != nil {
		t.Fatal(err)
	}
	c := Chain{StripPrefix("student."), r}
	v := c.Apply(infos("student.backbone.norm.weight"), nil)
	if got := names(v); !slices.Equal(got, []string{"model.norm.weight"}) || v.Tensors[0].Source != "student.backbone.norm.weight" {
		t.Errorf("got %s from %v", got, v.Tensors)
	}
	if c.Name() != `strip-prefix=student.,rename=^backbone\.(.*)$=model.$1` {
		t.Errorf("name %s", c.Name())
	}
	for _, bad := range []string{"noequals", "=x", "(=x"} {
		if _, err := Rename(bad); err == nil {
			t.Errorf("Rename(%q): want an error", bad)
		}
	}
}

func TestCollisions(t *testing.T) {
	v := mustChain(t, "ddp").Apply(infos("module.a", "a", "module.b"), nil)
	if len(v.Tensors) != 2 || len(v.Collisions) != 1 || !slices.Equal(v.Collisions[0].Sources, []string{"module.a", "a"}) {
		t.Fatalf("view %+v", v)
	}
	b, ok := v.Tensor("b")
	if !ok || b.Source != "module.b" || len(b.Segments) != 1 || b.Segments[0] != (Segment{Source: 2, Offset: 0, Length: 8}) {
		t.Errorf("b = %+v", b)
	}
}

func choose(pub, exp []safetensors.TensorInfo, modelType string, user []*Adapter) (*View, *View) {
	return Choose(Side{Tensors: pub, Candidates: Candidates(pub, modelType, user, nil)},
		Side{Tensors: exp, Candidates: Candidates(exp, modelType, user, nil)}, nil)
}

func TestChoose(t *testing.T) {
	hf := []string{"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"}
	prefix := func(p string, names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = p + n
		}
		return out
	}
	tests := []struct {
		name             string
		pub, exp         []string
		wantPub, wantExp string
	}{
		{"identical", hf, hf, "hf", "hf"},
		{"torchtitan wrapper", hf, append(prefix("model.", hf), "model.lm_head.weight"), "hf", "torchtitan-hf"},
		{"compiled ddp", hf, prefix("module._orig_mod.", hf), "hf", "ddp,compile"},
		{"compiled torchtitan", hf, prefix("_orig_mod.model.", hf), "hf", "compile,torchtitan-hf"},
		{"fsdp and ddp", hf, prefix("module.", prefix("_fsdp_wrapped_module.", hf)), "hf", "ddp,fsdp"},
		{"published is the wrapped one", prefix("model.", hf), hf, "torchtitan-hf", "hf"},
		{"native torchtitan", hf, []string{"tok_embeddings.weight", "layers.0.feed_forward.w3.weight", "norm.weight"}, "hf", "torchtitan-qwen3"},
		{"megatron", hf, []string{"embedding.word_embeddings.weight", "decoder.final_layernorm.weight"}, "hf", "megatron"},
		{"unrelated", hf, []string{"x", "y"}, "hf", "hf"},
		{"empty", nil, nil, "hf", "hf"},
	}
	for _, tt := range tests {
		p, e := choose(infos(tt.pub...), infos(tt.exp...), "", nil)
		if p.Adapter != tt.wantPub || e.Adapter != tt.wantExp {
			t.Errorf("%s: got %s / %s, want %s / %s", tt.name, p.Adapter, e.Adapter, tt.wantPub, tt.wantExp)
		}
	}
	// No candidates is the identity.
	if p, e := Choose(Side{Tensors: infos("a")}, Side{Tensors: infos("a")}, nil); p.Adapter != "hf" || e.Adapter != "hf" || len(e.Tensors) != 1 {
		t.Errorf("no candidates: %v / %v", p, e)
	}
}

func TestCandidatesFamily(t *testing.T) {
	// The family decides between adapters that match the same names.
	exp := infos("tok_embeddings.weight", "layers.0.attention.wq.weight")
	tests := []struct {
		modelType string
		want      []string
	}{
		{"llama", []string{"hf", "torchtitan-llama3"}},
		{"qwen3", []string{"hf", "torchtitan-qwen3"}},
		{"qwen3_moe", []string{"hf", "torchtitan-qwen3"}},
		{"deepseek_v3", []string{"hf", "torchtitan-deepseek-v3"}},
		{"llama4", []string{"hf", "torchtitan-llama4"}},
		{"", []string{"hf", "torchtitan-qwen3", "torchtitan-deepseek-v3", "torchtitan-llama4", "torchtitan-qwen3_5", "torchtitan-llama3"}},
		{"gpt2", []string{"hf"}},
	}
	for _, tt := range tests {
		if got := chainNames(Candidates(exp, tt.modelType, nil, nil)); !slices.Equal(got, tt.want) {
			t.Errorf("%q: candidates %v, want %v", tt.modelType, got, tt.want)
		}
	}
}

func chainNames(cs []Chain) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name()
	}
	return out
}

// TestAutoDirectives: what auto tries comes from the adapter files, so a
// new scheme needs no Go change.
func TestAutoDirectives(t *testing.T) {
	parse := func(src string) *Adapter {
		t.Helper()
		a, err := Parse("test", src)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	student := parse("name student\nauto structural\nfamily qwen3\nrename student.{x} model.{x}")
	wrap := parse("name wrap\nauto wrapper\nremove-segment _wrapped")
	hidden := parse("name hidden\nauto never\nstrip-prefix student.")
	byDefault := parse("name plain\nrename student.{x} model.{x}")
	if byDefault.Auto != AutoStructural || hidden.Auto != AutoNever || wrap.Auto != AutoWrapper {
		t.Fatalf("auto %v %v %v", byDefault.Auto, hidden.Auto, wrap.Auto)
	}
	user := []*Adapter{hidden, student, wrap, byDefault}
	tests := []struct {
		name, modelType string
		in              []string
		want            []string
	}{
		{"structural", "qwen3", []string{"student.norm"}, []string{"hf", "student", "plain"}},
		{"family does not fit", "llama", []string{"student.norm"}, []string{"hf", "plain"}},
		{"user wrapper before the presets'", "qwen3", []string{"module._wrapped.student.norm"},
			[]string{"wrap,ddp", "wrap,ddp,student", "wrap,ddp,plain"}},
		{"nothing maps", "qwen3", []string{"x.norm"}, []string{"hf"}},
	}
	for _, tt := range tests {
		if got := chainNames(Candidates(infos(tt.in...), tt.modelType, user, nil)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: candidates %v, want %v", tt.name, got, tt.want)
		}
	}
	// A user adapter hides the preset of its name.
	mine := parse("name torchtitan-hf\nauto never\nstrip-prefix model.")
	if got := chainNames(Candidates(infos("model.model.norm.weight"), "", []*Adapter{mine}, nil)); !slices.Equal(got, []string{"hf"}) {
		t.Errorf("shadowed preset: candidates %v", got)
	}
}

// TestLoadPresets: the presets are the files in presets/, ordered by their
// own auto and order lines.
func TestLoadPresets(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, a := range Presets() {
		fsys["presets/"+a.Name+".adapter"] = &fstest.MapFile{Data: []byte(a.Source)}
	}
	fsys["presets/aaa-new.adapter"] = &fstest.MapFile{Data: []byte("name aaa-new\ndoc new\nauto structural\norder 45\nrename x y")}
	fsys["presets/zz-wrap.adapter"] = &fstest.MapFile{Data: []byte("name zz-wrap\ndoc new\nauto wrapper\nremove-segment zz")}
	fsys["presets/README"] = &fstest.MapFile{Data: []byte("not an adapter")}
	got, err := loadPresets(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, a.Name)
	}
	want := []string{"hf", "torchtitan-qwen3_5-export", "zz-wrap", "ddp", "compile", "fsdp",
		"torchtitan-hf", "torchtitan-qwen3", "torchtitan-deepseek-v3", "torchtitan-llama4", "torchtitan-qwen3_5", "torchtitan-llama3",
		"hf-v5-fused", "hf-v5-mixtral", "hf-v5-jamba", "hf-v5-lfm2-moe", "hf-v5-qwen3-vl-moe", "aaa-new", "megatron", "gguf-deepseek2", "gguf-gemma", "gguf-gemma2", "gguf-gpt-oss", "gguf-llama", "gguf-phi3", "gguf-qwen", "gguf-qwen3moe", "mlx-lm", "nanogpt", "gguf-gemma3"}
	if !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	fsys["presets/bad.adapter"] = &fstest.MapFile{Data: []byte("name good")}
	if _, err := loadPresets(fsys); err == nil {
		t.Error("a preset named unlike its file: want an error")
	}
}

func TestPresetsParseAndDocument(t *testing.T) {
	var names []string
	for _, a := range Presets() {
		names = append(names, a.Name)
		b, err := presetFiles.ReadFile("presets/" + a.Name + ".adapter")
		if err != nil || string(b) != a.Source {
			t.Errorf("preset %s: not its file: %v", a.Name, err)
		}
		if a.Doc == "" {
			t.Errorf("preset %s: no doc line", a.Name)
		}
		if !strings.Contains(a.Source, "\nauto ") {
			t.Errorf("preset %s: no auto line", a.Name)
		}
		// Every preset says what it was checked against, except the
		// identity and the wrappers, which no version changes.
		if len(a.Covers) == 0 && a.Name != "hf" && a.Auto != AutoWrapper {
			t.Errorf("preset %s: no covers line", a.Name)
		}
	}
	want := []string{"hf", "torchtitan-qwen3_5-export", "ddp", "compile", "fsdp", "torchtitan-hf",
		"torchtitan-qwen3", "torchtitan-deepseek-v3", "torchtitan-llama4", "torchtitan-qwen3_5", "torchtitan-llama3",
		"hf-v5-fused", "hf-v5-mixtral", "hf-v5-jamba", "hf-v5-lfm2-moe", "hf-v5-qwen3-vl-moe", "megatron", "gguf-deepseek2", "gguf-gemma", "gguf-gemma2", "gguf-gpt-oss", "gguf-llama", "gguf-phi3", "gguf-qwen", "gguf-qwen3moe", "mlx-lm", "nanogpt", "gguf-gemma3"}
	if !slices.Equal(names, want) {
		t.Errorf("Presets() = %v, want %v", names, want)
	}
	if _, err := (&Registry{}).Lookup("nope"); err == nil || !strings.Contains(err.Error(), "megatron") {
		t.Errorf("Lookup(nope): %v, want the presets listed", err)
	}
}

// TestChooseAppliesOnce: every candidate chain of each side is applied
// exactly once, however many the other side has.
func TestChooseAppliesOnce(t *testing.T) {
	counts := map[string]int{}
	testHookApply = func(c Chain) { counts[c.Name()]++ }
	defer func() { testHookApply = nil }()
	pub := infos("a.x", "b.x")
	exp := infos("p.x", "q.x")
	rename := func(name, from, to string) Chain {
		a, err := Parse("test", "name "+name+"\nregex ^"+from+"\\. "+to+".")
		if err != nil {
			t.Fatal(err)
		}
		return Chain{a}
	}
	pubCands := []Chain{nil, rename("pa", "a", "c"), rename("pb", "b", "d")}
	expCands := []Chain{rename("ep", "p", "z"), rename("eq", "q", "y"), rename("ex", "p", "a")}
	p, e := Choose(Side{Tensors: pub, Candidates: pubCands}, Side{Tensors: exp, Candidates: expCands}, nil)
	if p.Adapter != "hf" || e.Adapter != "ex" {
		t.Errorf("chose %s / %s, want hf / ex", p.Adapter, e.Adapter)
	}
	want := map[string]int{"hf": 1, "pa": 1, "pb": 1, "ep": 1, "eq": 1, "ex": 1}
	if !maps.Equal(counts, want) {
		t.Errorf("applications %v, want each once: %v", counts, want)
	}
	// A perfect pair ends the search: later chains are not applied.
	clear(counts)
	Choose(Side{Tensors: pub, Candidates: pubCands}, Side{Tensors: pub, Candidates: expCands}, nil)
	if want := map[string]int{"hf": 1, "ep": 1}; !maps.Equal(counts, want) {
		t.Errorf("applications %v, want %v", counts, want)
	}
}
