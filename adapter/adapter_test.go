package adapter

import (
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func TestPresetsMapNames(t *testing.T) {
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
	}
	for _, tt := range tests {
		a, err := Parse(tt.chain)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.MapName(tt.in); got != tt.want {
			t.Errorf("%s(%s) = %s, want %s", tt.chain, tt.in, got, tt.want)
		}
	}
	if _, err := Parse("torchtitan-hf,nope"); err == nil {
		t.Error("an unknown preset must be an error")
	}
}

func TestCustom(t *testing.T) {
	r, err := Rename(`^backbone\.(.*)$=model.$1`)
	if err != nil {
		t.Fatal(err)
	}
	a := StripPrefix("student.").Then(r)
	if got := a.MapName("student.backbone.norm.weight"); got != "model.norm.weight" {
		t.Errorf("got %s", got)
	}
	if a.Name() != `strip-prefix=student.,rename=^backbone\.(.*)$=model.$1` {
		t.Errorf("name %s", a.Name())
	}
	for _, bad := range []string{"noequals", "=x", "(=x"} {
		if _, err := Rename(bad); err == nil {
			t.Errorf("Rename(%q): want an error", bad)
		}
	}
}

func TestApplyCollisions(t *testing.T) {
	infos := []safetensors.TensorInfo{
		{Name: "module.a", DType: safetensors.F32, Shape: []uint64{2}, DataOffsets: [2]uint64{0, 8}},
		{Name: "a", DType: safetensors.F32, Shape: []uint64{2}, DataOffsets: [2]uint64{8, 16}},
		{Name: "module.b", DType: safetensors.BF16, Shape: []uint64{}, DataOffsets: [2]uint64{16, 18}},
	}
	ddp, _ := Preset("ddp")
	v := ddp.Apply(infos)
	if len(v.Tensors) != 2 || len(v.Collisions) != 1 || !slices.Equal(v.Collisions[0].Sources, []string{"module.a", "a"}) {
		t.Fatalf("view %+v", v)
	}
	b, ok := v.Tensor("b")
	if !ok || b.Source != "module.b" || len(b.Segments) != 1 || b.Segments[0] != (Segment{Source: 2, Offset: 0, Length: 2}) {
		t.Errorf("b = %+v", b)
	}
}

func TestAuto(t *testing.T) {
	hf := []string{"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"}
	prefix := func(p string, names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = p + n
		}
		return out
	}
	tests := []struct {
		name     string
		pub, exp []string
		wantPub  string
		wantExp  string
	}{
		{"identical", hf, hf, "hf", "hf"},
		{"torchtitan wrapper", hf, append(prefix("model.", hf), "model.lm_head.weight"), "hf", "torchtitan-hf"},
		{"compiled ddp", hf, prefix("module._orig_mod.", hf), "hf", "ddp,compile"},
		{"compiled torchtitan", hf, prefix("_orig_mod.model.", hf), "hf", "compile,torchtitan-hf"},
		{"published is the wrapped one", prefix("model.", hf), hf, "torchtitan-hf", "hf"},
		{"unrelated", hf, []string{"x", "y"}, "hf", "hf"},
		{"empty", nil, nil, "hf", "hf"},
	}
	for _, tt := range tests {
		pub, exp := infos(tt.pub), infos(tt.exp)
		p, e := Choose(pub, exp, Candidates(pub, nil), Candidates(exp, nil))
		if p.Adapter != tt.wantPub || e.Adapter != tt.wantExp {
			t.Errorf("%s: got %s / %s, want %s / %s", tt.name, p.Adapter, e.Adapter, tt.wantPub, tt.wantExp)
		}
	}
	// A single candidate fixes a side.
	hfOnly := []*Adapter{{}}
	pub, exp := infos(hf), infos(prefix("model.", hf))
	if _, e := Choose(pub, exp, hfOnly, hfOnly); e.Adapter != "hf" || len(e.Tensors) != len(hf) {
		t.Errorf("fixed: %s", e.Adapter)
	}
}

func infos(names []string) []safetensors.TensorInfo {
	out := make([]safetensors.TensorInfo, len(names))
	for i, n := range names {
		out[i] = safetensors.TensorInfo{Name: n, DType: safetensors.F32, Shape: []uint64{}}
	}
	return out
}
