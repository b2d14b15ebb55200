package adapter

import (
	"slices"
	"strings"
	"testing"

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
		{"torchtitan-hf,compile", "_orig_mod.model.model.norm.weight", "model.model.norm.weight"},
		{"compile,torchtitan-hf", "_orig_mod.model.model.norm.weight", "model.norm.weight"},
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
	if got := names(c.Apply(infos("student.backbone.norm.weight"), nil)); got[0] != "model.norm.weight" {
		t.Errorf("got %s", got)
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
		{"published is the wrapped one", prefix("model.", hf), hf, "torchtitan-hf", "hf"},
		{"native torchtitan", hf, []string{"tok_embeddings.weight", "layers.0.feed_forward.w3.weight", "norm.weight"}, "hf", "torchtitan-qwen3"},
		{"megatron", hf, []string{"embedding.word_embeddings.weight", "decoder.final_layernorm.weight"}, "hf", "megatron"},
		{"unrelated", hf, []string{"x", "y"}, "hf", "hf"},
		{"empty", nil, nil, "hf", "hf"},
	}
	for _, tt := range tests {
		pub, exp := infos(tt.pub...), infos(tt.exp...)
		p, e := Choose(pub, exp, Candidates(pub, "", nil, nil), Candidates(exp, "", nil, nil), nil)
		if p.Adapter != tt.wantPub || e.Adapter != tt.wantExp {
			t.Errorf("%s: got %s / %s, want %s / %s", tt.name, p.Adapter, e.Adapter, tt.wantPub, tt.wantExp)
		}
	}
	// The family decides between adapters that match the same names.
	exp := infos("tok_embeddings.weight", "layers.0.attention.wq.weight")
	for modelType, want := range map[string]string{"llama": "torchtitan-llama3", "qwen3": "torchtitan-qwen3", "": "torchtitan-qwen3"} {
		cands := Candidates(exp, modelType, nil, nil)
		if len(cands) < 2 || cands[1].Name() != want {
			t.Errorf("%q: candidates %v, want %s second", modelType, cands, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"doc no name",
		"name x\nfrobnicate a b",
		"name x\nrename a",
		"name x\nrename a.{i} b.{j}",
		"name x\npermute a b",
		"name x\nsplit a b c sizes=1",
		"name x\nsplit a b c dim=-1",
		"name x\nsplit a b c groups=2*",
		"name x\nsplit a b c groups=2**3",
		"name x\nregex ( y",
		"name x\ndrop a",
		"name x\nconcat a b",
		"name x\nunstack a b color=red",
	} {
		if _, err := Parse("test", src); err == nil {
			t.Errorf("%q: want an error", src)
		}
	}
	a, err := Parse("test", "# comment\nname x # trailing\ndoc one\ndoc two\nfamily llama mistral\nrename a b")
	if err != nil || a.Name != "x" || a.Doc != "one two" || !slices.Equal(a.Families, []string{"llama", "mistral"}) {
		t.Errorf("%+v %v", a, err)
	}
}

func TestExpressions(t *testing.T) {
	env := Env{"num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}
	for src, want := range map[string]int64{
		"num_attention_heads/num_key_value_heads*head_dim": 512,
		"head_dim":        128,
		"2+3*4":           14,
		"hidden_size-1+1": 4096,
	} {
		e, err := parseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.eval(env, false); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", src, got, err, want)
		}
	}
	for _, src := range []string{"7/2", "missing", "1/0", "hidden_size/0"} {
		e, err := parseExpr(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if _, err := e.eval(env, false); err == nil {
			t.Errorf("%s: want an error", src)
		}
	}
}

func TestPresetsParseAndDocument(t *testing.T) {
	for _, a := range Presets() {
		if a.Doc == "" || !strings.Contains(a.Source, a.Name) {
			t.Errorf("preset %s: doc %q", a.Name, a.Doc)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, a := range Presets() {
		f.Add(a.Source)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a, err := Parse("fuzz", src)
		if err != nil {
			return
		}
		Chain{a}.Apply(infos("layers.0.attention.wq.weight", "a.b.c"), Env{"num_attention_heads": 1, "hidden_size": 2})
	})
}

func TestLayoutSegments(t *testing.T) {
	f32 := func(name string, off uint64, shape ...uint64) safetensors.TensorInfo {
		n := uint64(4)
		for _, d := range shape {
			n *= d
		}
		return safetensors.TensorInfo{Name: name, DType: safetensors.F32, Shape: shape, DataOffsets: [2]uint64{off, off + n}}
	}
	tests := []struct {
		rules  string
		in     []safetensors.TensorInfo
		want   map[string][]Segment
		shapes map[string][]uint64
	}{
		{"split x l r dim=1", []safetensors.TensorInfo{f32("x", 0, 2, 4)},
			map[string][]Segment{"l": {{0, 0, 8}, {0, 16, 8}}, "r": {{0, 8, 8}, {0, 24, 8}}},
			map[string][]uint64{"l": {2, 2}, "r": {2, 2}}},
		{"split x q k v groups=2 sizes=2,1,1", []safetensors.TensorInfo{f32("x", 0, 8, 1)},
			map[string][]Segment{"q": {{0, 0, 8}, {0, 16, 8}}, "k": {{0, 8, 4}, {0, 24, 4}}, "v": {{0, 12, 4}, {0, 28, 4}}},
			map[string][]uint64{"q": {4, 1}, "k": {2, 1}, "v": {2, 1}}},
		{"concat a+b ab dim=1", []safetensors.TensorInfo{f32("a", 0, 2, 2), f32("b", 16, 2, 2)},
			map[string][]Segment{"ab": {{0, 0, 8}, {1, 0, 8}, {0, 8, 8}, {1, 8, 8}}},
			map[string][]uint64{"ab": {2, 4}}},
		{"permute x y heads=1", []safetensors.TensorInfo{f32("x", 0, 4, 1)},
			map[string][]Segment{"y": {{0, 0, 4}, {0, 8, 4}, {0, 4, 4}, {0, 12, 4}}},
			map[string][]uint64{"y": {4, 1}}},
		{"unstack x a.{e} b.{e}", []safetensors.TensorInfo{f32("x", 0, 2, 2, 1)},
			map[string][]Segment{"a.0": {{0, 0, 4}}, "b.0": {{0, 4, 4}}, "a.1": {{0, 8, 4}}, "b.1": {{0, 12, 4}}},
			map[string][]uint64{"a.0": {1, 1}, "b.1": {1, 1}}},
	}
	for _, tt := range tests {
		a, err := Parse("test", "name t\n"+tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		v := Chain{a}.Apply(tt.in, nil)
		if len(v.Errors) > 0 || len(v.Tensors) != len(tt.want) {
			t.Errorf("%s: %v %v", tt.rules, names(v), v.Errors)
			continue
		}
		for name, want := range tt.want {
			got, ok := v.Tensor(name)
			if !ok || !slices.Equal(got.Segments, want) {
				t.Errorf("%s: %s segments %v, want %v", tt.rules, name, got.Segments, want)
			}
			if s, ok := tt.shapes[name]; ok && !slices.Equal(got.Shape, s) {
				t.Errorf("%s: %s shape %v, want %v", tt.rules, name, got.Shape, s)
			}
		}
	}
}

func TestRuleErrors(t *testing.T) {
	a, _ := Parse("test", "name t\nsplit x a b c\npermute y z heads=num_attention_heads\nconcat p+q pq\nunstack s s.{e}")
	in := infos("x", "y", "p", "s")
	in[0].Shape = []uint64{2}
	v := Chain{a}.Apply(in, Env{"num_attention_heads": 3})
	if len(v.Errors) != 4 || len(v.Tensors) != 0 {
		t.Fatalf("%v %v", names(v), v.Errors)
	}
	for _, e := range v.Errors {
		if !strings.HasPrefix(e.Rule, "t:") || e.Message == "" {
			t.Errorf("%v", e)
		}
	}
}

// TestHostileShapes: shapes from a header must not make a rule loop or
// allocate without end.
func TestHostileShapes(t *testing.T) {
	a, err := Parse("test", "name t\nunstack u u.{e}\npermute p p2 heads=1\nsplit s s1 s2 dim=1\nsplit g g1 g2 groups=2\nconcat c1+c2 c dim=1")
	if err != nil {
		t.Fatal(err)
	}
	huge := uint64(1) << 40
	in := []safetensors.TensorInfo{
		{Name: "u", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "p", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "s", DType: safetensors.F32, Shape: []uint64{huge, 2, 0}},
		{Name: "g", DType: safetensors.U8, Shape: []uint64{1 << 62, 1 << 62, 4}},
		{Name: "c1", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "c2", DType: safetensors.F32, Shape: []uint64{huge, 0}},
	}
	v := Chain{a}.Apply(in, nil)
	if _, ok := v.Tensor("p2"); !ok {
		t.Errorf("an empty [2^40, 0] tensor permutes to itself: %v", v.Errors)
	}
	if _, ok := v.Tensor("s1"); !ok {
		t.Errorf("an empty tensor splits into empty parts: %v", v.Errors)
	}
	errs := map[string]bool{}
	for _, e := range v.Errors {
		errs[e.Name] = true
	}
	if !errs["u"] || !errs["g"] {
		t.Errorf("want errors for u (too many slices) and g (overflow): %v", v.Errors)
	}
}
