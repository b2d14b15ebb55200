package adapter

import (
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestTranspose: transpose swaps the last two dimensions and marks the
// tensor transposed without moving a byte; twice is the identity.
func TestTranspose(t *testing.T) {
	in := []safetensors.TensorInfo{f32("x", 0, 3, 2, 4), f32("v", 96, 5)}
	v := Chain{parseRules(t, "transpose x y")}.Apply(in, nil)
	y, ok := v.Tensor("y")
	if !ok || !y.Transposed || !slices.Equal(y.Shape, []uint64{3, 4, 2}) || !slices.Equal(y.Segments, []Segment{{Source: 0, Offset: 0, Length: 96}}) ||
		y.Source != "x.mT" {
		t.Errorf("y = %+v", y)
	}
	v = Chain{parseRules(t, "transpose x y\nthen\ntranspose y z")}.Apply(in, nil)
	if z, ok := v.Tensor("z"); !ok || z.Transposed || !slices.Equal(z.Shape, []uint64{3, 2, 4}) {
		t.Errorf("z = %+v", z)
	}
	v = Chain{parseRules(t, "transpose v w")}.Apply(in, nil)
	if len(v.Errors) != 1 || !strings.Contains(v.Errors[0].Message, "fewer than two dimensions") {
		t.Errorf("transposing a vector: %v", v.Errors)
	}
}

// TestTransposedCuts: a transposed tensor is cut along its leading
// dimensions only, and what is cut stays transposed.
func TestTransposedCuts(t *testing.T) {
	in := []safetensors.TensorInfo{f32("x", 0, 2, 3, 4)} // stored [2, 3, 4], logical [2, 4, 3]
	tests := []struct {
		name, rules string
		err         string // "" for success
		check       func(v *View) bool
	}{
		{"unstack the stack", "transpose x y\nthen\nunstack y z.{e}", "", func(v *View) bool {
			z, ok := v.Tensor("z.1")
			return ok && z.Transposed && slices.Equal(z.Shape, []uint64{4, 3}) && slices.Equal(z.Segments, []Segment{{Source: 0, Offset: 48, Length: 48}})
		}},
		{"split the stack", "transpose x y\nthen\nsplit y a b", "", func(v *View) bool {
			b, ok := v.Tensor("b")
			return ok && b.Transposed && slices.Equal(b.Shape, []uint64{1, 4, 3}) && slices.Equal(b.Segments, []Segment{{Source: 0, Offset: 48, Length: 48}})
		}},
		{"split a swapped dimension", "transpose x y\nthen\nsplit y a b dim=2", "only along its leading dimensions", nil},
		{"unstack and split a swapped dimension", "transpose x y\nthen\nunstack y a.{e} b.{e}", "not dimension 1", nil},
		{"permute a swapped dimension", "transpose x y\nthen\nunstack y z.{e}\nthen\npermute z.0 w heads=1", "only along its leading", nil},
		{"join transposed with plain", "transpose x y\nthen\nconcat y+z w", "stored transposed with one that is not", nil},
	}
	in = append(in, f32("z", 96, 2, 4, 3))
	for _, tt := range tests {
		v := Chain{parseRules(t, tt.rules)}.Apply(in, Env{})
		switch {
		case tt.err == "" && (len(v.Errors) > 0 || !tt.check(v)):
			t.Errorf("%s: %v %v", tt.name, names(v), v.Errors)
		case tt.err != "" && (len(v.Errors) == 0 || !strings.Contains(v.Errors[0].Message, tt.err)):
			t.Errorf("%s: errors %v, want %q", tt.name, v.Errors, tt.err)
		}
	}
}

// TestStages: the rules after "then" see what the rules before made, by
// its new name, and layouts compose: a fused QKV split per group, then its
// q rows permuted (torchtitan's Llama 3 wqkv).
func TestStages(t *testing.T) {
	a := parseRules(t, "split qkv q k v groups=1 sizes=4,2,2\nthen\npermute q q_proj heads=1\nrename k k_proj")
	v := Chain{a}.Apply([]safetensors.TensorInfo{f32("qkv", 0, 8, 1)}, Env{})
	q, ok := v.Tensor("q_proj")
	// q holds rows 0..3; HF row (h, b, a) is native row (h, a, b) of [1, 2, 2].
	want := []Segment{{Source: 0, Offset: 0, Length: 4}, {Source: 0, Offset: 8, Length: 4}, {Source: 0, Offset: 4, Length: 4}, {Source: 0, Offset: 12, Length: 4}}
	if !ok || !slices.Equal(q.Segments, want) || !strings.HasPrefix(q.Rule, "t:4: permute") || q.Source != "qkv[0:4, :]" {
		t.Errorf("q_proj = %+v (%v)", q, v.Errors)
	}
	if _, ok := v.Tensor("k_proj"); !ok {
		t.Errorf("k_proj missing: %v", names(v))
	}
	if _, ok := v.Tensor("v"); !ok {
		t.Errorf("v, which the second stage does not map, missing: %v", names(v))
	}
	// A later stage alone makes the adapter a candidate.
	if !a.mapsAny(infos("q"), nil) {
		t.Error("the second stage's rules do not count for mapsAny")
	}
	if _, err := Parse("t", "name t\nthen now"); err == nil || !strings.Contains(err.Error(), "then stands alone") {
		t.Errorf("then with arguments: %v", err)
	}
}

// TestTemplateExpressions: a DST segment may compute a layer index from a
// numeric capture and config values (torchtitan's DeepSeek-V3 MTP layer j
// is HF layer num_hidden_layers + j).
func TestTemplateExpressions(t *testing.T) {
	a := parseRules(t, "rename mtp.{j}.w layers.{j+num_hidden_layers}.w\nrename x.{k}.w y.{k*2-1}.w")
	v := Chain{a}.Apply(infos("mtp.0.w", "mtp.2.w", "x.3.w", "x.a.w"), Env{"num_hidden_layers": 61})
	var got []string
	for _, t := range v.Tensors {
		got = append(got, t.Name)
	}
	if want := []string{"layers.61.w", "layers.63.w", "y.5.w"}; !slices.Equal(got, want) || len(v.Errors) != 1 ||
		!strings.Contains(v.Errors[0].Message, `{k} is "a", not a number`) {
		t.Errorf("names %v, errors %v", got, v.Errors)
	}
	v = Chain{a}.Apply(infos("mtp.0.w"), Env{})
	if len(v.Errors) != 1 || !strings.Contains(v.Errors[0].Message, "config.json has no num_hidden_layers") {
		t.Errorf("without the config value: %v", v.Errors)
	}
	if _, err := Parse("t", "name t\nrename a.{j} b.{j+}"); err == nil || !strings.Contains(err.Error(), "ends early") {
		t.Errorf("a bad expression: %v", err)
	}
}

// TestUnstackDim: unstack's outputs split each slice along dim=N.
func TestUnstackDim(t *testing.T) {
	v := Chain{parseRules(t, "unstack x a.{e} b.{e} dim=1")}.Apply([]safetensors.TensorInfo{f32("x", 0, 2, 2, 4)}, nil)
	a1, ok := v.Tensor("a.1")
	if !ok || !slices.Equal(a1.Shape, []uint64{2, 2}) || !slices.Equal(a1.Segments, []Segment{{Source: 0, Offset: 32, Length: 8}, {Source: 0, Offset: 48, Length: 8}}) {
		t.Errorf("a.1 = %+v %v", a1, v.Errors)
	}
}

// TestCovers: covers lines are kept one per line, comments aside.
func TestCovers(t *testing.T) {
	a := parseRules(t, "covers v0.2.0 .. v0.2.2 # tags\ncovers main #4 to b5bcd76c\nrename a b")
	if want := []string{"v0.2.0 .. v0.2.2", "main #4 to b5bcd76c"}; !slices.Equal(a.Covers, want) {
		t.Errorf("covers %q, want %q", a.Covers, want)
	}
	if _, err := Parse("t", "name t\ncovers"); err == nil {
		t.Error("an empty covers line: want an error")
	}
}

// TestAdd: add= puts a shift on what a mapping makes, stages add up, and
// a tensor read transposed takes none.
func TestAdd(t *testing.T) {
	in := []safetensors.TensorInfo{f32("n", 0, 4), f32("s", 16, 2, 3, 4), f32("m", 112, 2, 2), f32("o", 128, 4)}
	tests := []struct {
		name, rules string
		want        map[string]float64 // Add by tensor
		err         string
	}{
		{"rename", "rename n w add=-1", map[string]float64{"w": -1, "s": 0}, ""},
		{"every slice", "unstack s x.{e} add=0.5", map[string]float64{"x.0": 0.5, "x.1": 0.5}, ""},
		{"stages add up", "rename n w add=-1\nthen\nrename w v add=0.25", map[string]float64{"v": -0.75}, ""},
		{"kept through cuts", "rename s s2 add=2\nthen\nunstack s2 y.{e}\nthen\nsplit y.1 a b dim=1", map[string]float64{"y.0": 2, "a": 2, "b": 2}, ""},
		{"kept through a join", "rename n n2 add=1\nrename o o2 add=2\nthen\nconcat n2+o2 j", nil, "shifted differently"},
		{"transposed", "transpose m t\nthen\nrename t u add=1", nil, "read transposed"},
		{"shifted, then transposed", "rename m t add=1\nthen\ntranspose t u", nil, "read transposed"},
	}
	for _, tt := range tests {
		v := Chain{parseRules(t, tt.rules)}.Apply(in, Env{})
		if tt.err != "" {
			if len(v.Errors) == 0 || !strings.Contains(v.Errors[0].Message, tt.err) || v.Index("u") >= 0 || v.Index("j") >= 0 {
				t.Errorf("%s: errors %v, want %q", tt.name, v.Errors, tt.err)
			}
			continue
		}
		for name, add := range tt.want {
			if x, ok := v.Tensor(name); !ok || x.Add != add {
				t.Errorf("%s: %s = %+v, want add %v", tt.name, name, x, add)
			}
		}
	}
	for _, bad := range []string{"rename a b add=0", "rename a b add=x", "rename a b add=inf", "transpose a b add=1", "ignore a add=1"} {
		if _, err := Parse("t", "name x\n"+bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestConcatEvery: concat with every= takes that many of each source's
// rows in turn without moving a byte: the joined tensor keeps the
// sources' segments and says its units (gpt-oss's gate_up_proj from
// llama.cpp's ffn_gate_exps and ffn_up_exps, read transposed after); an
// interleaved tensor is not cut or joined again, and sources of two sizes
// or a count that does not divide them are errors.
func TestConcatEvery(t *testing.T) {
	in := []safetensors.TensorInfo{f32("gate", 0, 2, 4, 3), f32("up", 96, 2, 4, 3), f32("short", 192, 2, 2, 3), f32("v", 240, 4)}
	tests := []struct {
		name, rules string
		err         string // "" for success
		check       func(v *View) bool
	}{
		{"a row of each", "concat gate+up gu dim=1 every=1", "", func(v *View) bool {
			gu, ok := v.Tensor("gu")
			return ok && !gu.Transposed && slices.Equal(gu.Shape, []uint64{2, 8, 3}) && slices.Equal(gu.Segments, []Segment{{Source: 0, Offset: 0, Length: 96}, {Source: 1, Offset: 0, Length: 96}}) &&
				slices.Equal(gu.Interleave, []uint64{12, 12}) && gu.Source == "interleave(gate, up; 1 along dim 1)"
		}},
		{"two rows of each, by config", "concat gate+up gu dim=1 every=num_key_value_heads", "", func(v *View) bool {
			gu, ok := v.Tensor("gu")
			return ok && slices.Equal(gu.Shape, []uint64{2, 8, 3}) && slices.Equal(gu.Interleave, []uint64{24, 24})
		}},
		{"then transposed", "concat gate+up gu dim=1 every=1\nthen\ntranspose gu w", "", func(v *View) bool {
			w, ok := v.Tensor("w")
			return ok && w.Transposed && slices.Equal(w.Shape, []uint64{2, 3, 8}) && slices.Equal(w.Interleave, []uint64{12, 12})
		}},
		{"values of a vector", "concat v+v2 w dim=0 every=1", "", func(v *View) bool {
			w, ok := v.Tensor("w")
			return ok && slices.Equal(w.Shape, []uint64{8}) && slices.Equal(w.Interleave, []uint64{4, 4})
		}},
		{"then cut", "concat gate+up gu dim=1 every=1\nthen\nunstack gu e.{e}", "cannot be cut", nil},
		{"then joined", "concat gate+up gu dim=1 every=1\nthen\nconcat gu+v x", "cannot be joined again", nil},
		{"two sizes", "concat gate+short gs dim=1 every=1", "in turn", nil},
		{"not dividing", "concat gate+up gu dim=1 every=3", "in turn", nil},
		{"zero", "concat gate+up gu dim=1 every=num_key_value_heads-2", "want a positive number", nil},
	}
	in = append(in, f32("v2", 256, 4))
	for _, tt := range tests {
		v := Chain{parseRules(t, tt.rules)}.Apply(in, Env{"num_key_value_heads": 2})
		switch {
		case tt.err == "" && (len(v.Errors) > 0 || !tt.check(v)):
			t.Errorf("%s: %v %v", tt.name, names(v), v.Errors)
		case tt.err != "" && (len(v.Errors) == 0 || !strings.Contains(v.Errors[0].Message, tt.err)):
			t.Errorf("%s: errors %v, want %q", tt.name, v.Errors, tt.err)
		}
	}
}

// TestTiles: concat joins a tensor read transposed with others along its
// rows, matrix by matrix, each of its matrices a segment stored
// transposed (DeepSeek's kv_b_proj from attn_k_b, transposed, and
// attn_v_b); flatten then merges the heads into the rows. Such a tensor is
// not cut, joined, transposed or flattened across its last dimension.
func TestTiles(t *testing.T) {
	// k [2, 4, 3] read transposed as [2, 3, 4]; v [2, 2, 4].
	in := []safetensors.TensorInfo{f32("k", 0, 2, 4, 3), f32("v", 96, 2, 2, 4), f32("w", 160, 2, 2, 3)}
	const kv = "transpose k kt\nthen\nconcat kt+v kv dim=1\nthen\n"
	tests := []struct {
		name, rules string
		err         string // "" for success
		check       func(v *View) bool
	}{
		{"heads", kv + "flatten kv kvb", "", func(v *View) bool {
			x, ok := v.Tensor("kvb")
			return ok && !x.Transposed && slices.Equal(x.Shape, []uint64{10, 4}) &&
				slices.Equal(x.Segments, []Segment{{Source: 0, Offset: 0, Length: 48, Transposed: true}, {Source: 1, Offset: 0, Length: 32},
					{Source: 0, Offset: 48, Length: 48, Transposed: true}, {Source: 1, Offset: 32, Length: 32}}) &&
				x.Source == "join(k.mT, v along dim 1, tiles transposed).flatten(0, 1)"
		}},
		{"along the columns", "transpose k kt\nthen\nconcat kt+w kw dim=2", "not dimension 2", nil},
		{"along a leading dimension", "transpose k kt\nthen\nconcat kt+v kv dim=0", "stored transposed with one that is not", nil},
		{"then cut", kv + "unstack kv e.{e}", "cannot be cut", nil},
		{"then transposed", kv + "transpose kv x", "cannot be transposed whole", nil},
		{"then joined", kv + "concat kv+w x dim=1", "cannot be joined again", nil},
		{"its last dimension flattened", kv + "flatten kv x dims=1,2", "last dimension does not flatten", nil},
		{"a transposed tensor's rows flattened", "transpose k kt\nthen\nflatten kt x dims=0,1", "only its leading dimensions", nil},
		{"past the dimensions", "flatten w x dims=2,3", "no dimension 3", nil},
		{"a shift", "transpose k kt\nthen\nconcat kt+v kv dim=1 add=1", "a shift (add=) on a tensor read transposed", nil},
	}
	for _, tt := range tests {
		v := Chain{parseRules(t, tt.rules)}.Apply(in, Env{})
		switch {
		case tt.err == "" && (len(v.Errors) > 0 || !tt.check(v)):
			t.Errorf("%s: %v %v %+v", tt.name, names(v), v.Errors, v.Tensors)
		case tt.err != "" && (len(v.Errors) == 0 || !strings.Contains(v.Errors[0].Message, tt.err)):
			t.Errorf("%s: errors %v, want %q", tt.name, v.Errors, tt.err)
		}
	}
	if _, err := Parse("t", "name t\nflatten a b dims=2,1"); err == nil {
		t.Errorf("dims=2,1: no error")
	}
}

// TestDTypes: a rule with dtypes= maps only tensors stored in one of them,
// the others go on to the rules after it; a concat joins only when every
// source is of them, else all its sources go on.
func TestDTypes(t *testing.T) {
	u8 := func(name string, off uint64, shape ...uint64) safetensors.TensorInfo {
		ti := f32(name, off, shape...)
		ti.DType = safetensors.U8
		ti.DataOffsets[1] = off + product(shape)
		return ti
	}
	rules := parseRules(t, "rename a.{i} plain.{i} dtypes=F32,BF16\nrename a.{i} blocks.{i}\n"+
		"concat x.{i}+y.{i} xy.{i} dtypes=F32\ndrop x.{i} not both F32\ndrop y.{i} not both F32")
	v := Chain{rules}.Apply([]safetensors.TensorInfo{f32("a.0", 0, 2), u8("a.1", 8, 2), f32("x.0", 16, 2), f32("y.0", 24, 2),
		f32("x.1", 32, 2), u8("y.1", 40, 2)}, Env{})
	if got, want := names(v), []string{"blocks.1", "plain.0", "xy.0"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) || len(v.Errors) > 0 {
		t.Errorf("names %v, errors %v, want %v", got, v.Errors, want)
	}
	var dropped []string
	for _, d := range v.Dropped {
		dropped = append(dropped, d.Name)
	}
	if !slices.Equal(dropped, []string{"x.1", "y.1"}) {
		t.Errorf("dropped %v, want x.1 and y.1", dropped)
	}
	if _, err := Parse("t", "name t\nrename a b dtypes=F32,Q4"); err == nil || !strings.Contains(err.Error(), "no dtype") {
		t.Errorf("dtypes=F32,Q4: %v", err)
	}
}
