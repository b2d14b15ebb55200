package adapter

import (
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// f32 is a physical F32 tensor of the given shape at off.
func f32(name string, off uint64, shape ...uint64) safetensors.TensorInfo {
	n := uint64(4)
	for _, d := range shape {
		n *= d
	}
	return safetensors.TensorInfo{Name: name, DType: safetensors.F32, Shape: shape, DataOffsets: [2]uint64{off, off + n}}
}

func parseRules(t *testing.T, rules string) *Adapter {
	t.Helper()
	a, err := Parse("t", "name t\n"+rules)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLayoutSegments(t *testing.T) {
	tests := []struct {
		name   string
		rules  string
		in     []safetensors.TensorInfo
		want   map[string][]Segment
		shapes map[string][]uint64
	}{
		{"split columns", "split x l r dim=1", []safetensors.TensorInfo{f32("x", 0, 2, 4)},
			map[string][]Segment{"l": {{Source: 0, Offset: 0, Length: 8}, {Source: 0, Offset: 16, Length: 8}}, "r": {{Source: 0, Offset: 8, Length: 8}, {Source: 0, Offset: 24, Length: 8}}},
			map[string][]uint64{"l": {2, 2}, "r": {2, 2}}},
		{"split groups", "split x q k v groups=2 sizes=2,1,1", []safetensors.TensorInfo{f32("x", 0, 8, 1)},
			map[string][]Segment{"q": {{Source: 0, Offset: 0, Length: 8}, {Source: 0, Offset: 16, Length: 8}}, "k": {{Source: 0, Offset: 8, Length: 4}, {Source: 0, Offset: 24, Length: 4}}, "v": {{Source: 0, Offset: 12, Length: 4}, {Source: 0, Offset: 28, Length: 4}}},
			map[string][]uint64{"q": {4, 1}, "k": {2, 1}, "v": {2, 1}}},
		{"concat columns", "concat a+b ab dim=1", []safetensors.TensorInfo{f32("a", 0, 2, 2), f32("b", 16, 2, 2)},
			map[string][]Segment{"ab": {{Source: 0, Offset: 0, Length: 8}, {Source: 1, Offset: 0, Length: 8}, {Source: 0, Offset: 8, Length: 8}, {Source: 1, Offset: 8, Length: 8}}},
			map[string][]uint64{"ab": {2, 4}}},
		{"concat in rule order, whatever the file's", "concat up.{i}+gate.{i} gate_up.{i}",
			[]safetensors.TensorInfo{f32("gate.0", 0, 1, 2), f32("up.0", 8, 2, 2)},
			map[string][]Segment{"gate_up.0": {{Source: 1, Offset: 0, Length: 16}, {Source: 0, Offset: 0, Length: 8}}},
			map[string][]uint64{"gate_up.0": {3, 2}}},
		{"concat after a rewrite", "strip-prefix student.\nconcat a.{i}+b.{i} ab.{i}",
			[]safetensors.TensorInfo{f32("student.b.3", 0, 1), f32("student.a.3", 4, 2)},
			map[string][]Segment{"ab.3": {{Source: 1, Offset: 0, Length: 8}, {Source: 0, Offset: 0, Length: 4}}},
			map[string][]uint64{"ab.3": {3}}},
		{"three sources", "concat q.{i}+k.{i}+v.{i} qkv.{i}",
			[]safetensors.TensorInfo{f32("v.0", 0, 1), f32("q.0", 4, 1), f32("k.0", 8, 1), f32("other", 12, 1)},
			map[string][]Segment{"qkv.0": {{Source: 1, Offset: 0, Length: 4}, {Source: 2, Offset: 0, Length: 4}, {Source: 0, Offset: 0, Length: 4}}, "other": {{Source: 3, Offset: 0, Length: 4}}},
			map[string][]uint64{"qkv.0": {3}}},
		{"permute", "permute x y heads=1", []safetensors.TensorInfo{f32("x", 0, 4, 1)},
			map[string][]Segment{"y": {{Source: 0, Offset: 0, Length: 4}, {Source: 0, Offset: 8, Length: 4}, {Source: 0, Offset: 4, Length: 4}, {Source: 0, Offset: 12, Length: 4}}},
			map[string][]uint64{"y": {4, 1}}},
		{"unstack and split", "unstack x a.{e} b.{e}", []safetensors.TensorInfo{f32("x", 0, 2, 2, 1)},
			map[string][]Segment{"a.0": {{Source: 0, Offset: 0, Length: 4}}, "b.0": {{Source: 0, Offset: 4, Length: 4}}, "a.1": {{Source: 0, Offset: 8, Length: 4}}, "b.1": {{Source: 0, Offset: 12, Length: 4}}},
			map[string][]uint64{"a.0": {1, 1}, "b.1": {1, 1}}},
		{"rewrites only before the mapping", "rename x.{i} y.{i}\nstrip-prefix x.",
			[]safetensors.TensorInfo{f32("x.a", 0, 1), f32("x.b.c", 4, 1)},
			map[string][]Segment{"y.a": {{Source: 0, Offset: 0, Length: 4}}, "b.c": {{Source: 1, Offset: 0, Length: 4}}}, nil},
	}
	for _, tt := range tests {
		v := Chain{parseRules(t, tt.rules)}.Apply(tt.in, nil)
		if len(v.Errors) > 0 || len(v.Tensors) != len(tt.want) {
			t.Errorf("%s: %v %v", tt.name, names(v), v.Errors)
			continue
		}
		for name, want := range tt.want {
			got, ok := v.Tensor(name)
			if !ok || !slices.Equal(got.Segments, want) {
				t.Errorf("%s: %s segments %v, want %v", tt.name, name, got.Segments, want)
			}
			if s, ok := tt.shapes[name]; ok && !slices.Equal(got.Shape, s) {
				t.Errorf("%s: %s shape %v, want %v", tt.name, name, got.Shape, s)
			}
		}
	}
}

// TestLayoutOfLayout: a layout of a layout slices the segments the first
// made (a permuted tensor split in two).
func TestLayoutOfLayout(t *testing.T) {
	a := parseRules(t, "permute x y heads=2")
	b := parseRules(t, "split y top bottom")
	v := Chain{a, b}.Apply([]safetensors.TensorInfo{f32("x", 0, 24, 1)}, Env{})
	top, ok := v.Tensor("top")
	// Rows of the [2, 6, 2] view, head 0: 0 2 4 6 8 10, then 1 3 5 7 9 11.
	var want []Segment
	for _, row := range []uint64{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11} {
		want = append(want, Segment{Source: 0, Offset: row * 4, Length: 4})
	}
	if !ok || !slices.Equal(top.Segments, want) {
		t.Errorf("top = %v, want %v (%v)", top.Segments, want, v.Errors)
	}
}

func TestConcatErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    []safetensors.TensorInfo
		names []string // in the view
		errs  []string // tensors with an error
	}{
		{"missing source", []safetensors.TensorInfo{f32("a.0", 0, 1), f32("x", 4, 1)}, []string{"x"}, []string{"a.0"}},
		{"shapes differ", []safetensors.TensorInfo{f32("b.0", 0, 1, 2), f32("a.0", 8, 1, 3)}, nil, []string{"a.0", "b.0"}},
		{"a duplicate finds its partner joined", []safetensors.TensorInfo{f32("a.0", 0, 1), f32("b.0", 4, 1), f32("a.0", 8, 1)},
			[]string{"ab.0"}, []string{"a.0"}},
		{"two joins", []safetensors.TensorInfo{f32("b.1", 0, 1), f32("a.0", 4, 1), f32("a.1", 8, 1), f32("b.0", 12, 1)},
			[]string{"ab.1", "ab.0"}, nil},
	}
	a := parseRules(t, "concat a.{i}+b.{i} ab.{i}")
	for _, tt := range tests {
		v := Chain{a}.Apply(tt.in, nil)
		var errs []string
		for _, e := range v.Errors {
			errs = append(errs, e.Name)
		}
		slices.Sort(errs)
		if !slices.Equal(names(v), tt.names) || !slices.Equal(errs, tt.errs) {
			t.Errorf("%s: view %v errors %v, want %v and errors for %v", tt.name, names(v), v.Errors, tt.names, tt.errs)
		}
	}
}

func TestRuleErrors(t *testing.T) {
	a := parseRules(t, "split x a b c\npermute y z heads=num_attention_heads\nconcat p+q pq\nunstack s s.{e}\nsplit h h1 h2 sizes=big,big")
	in := infos("x", "y", "p", "s", "h")
	in[0].Shape = []uint64{2}
	in[4].Shape = []uint64{4}
	v := Chain{a}.Apply(in, Env{"num_attention_heads": 3, "big": 1 << 62})
	if len(v.Errors) != 5 || len(v.Tensors) != 0 {
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
	a := parseRules(t, "unstack u u.{e}\npermute p p2 heads=1\nsplit s s1 s2 dim=1\nsplit g g1 g2 groups=2\nconcat c1+c2 c dim=1\n"+
		"permute q q2 heads=num_attention_heads\nconcat z1+z2 z dim=1")
	huge := uint64(1) << 40
	in := []safetensors.TensorInfo{
		{Name: "u", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "p", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "s", DType: safetensors.F32, Shape: []uint64{huge, 2, 0}},
		{Name: "g", DType: safetensors.U8, Shape: []uint64{1 << 62, 1 << 62, 4}},
		{Name: "c1", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "c2", DType: safetensors.F32, Shape: []uint64{huge, 0}},
		{Name: "q", DType: safetensors.F32, Shape: []uint64{1 << 62, 2}},
		{Name: "z1", DType: safetensors.F32, Shape: []uint64{3486784401, 3486784401, 0}},
		{Name: "z2", DType: safetensors.F32, Shape: []uint64{3486784401, 3486784401, 0}},
	}
	v := Chain{a}.Apply(in, Env{"num_attention_heads": 1 << 62})
	for _, name := range []string{"p2", "s1", "c"} {
		got, ok := v.Tensor(name)
		var n uint64
		for _, s := range got.Segments {
			n += s.Length
		}
		if !ok || n != 0 {
			t.Errorf("an empty tensor maps to empty ones: %s %v %v", name, got, v.Errors)
		}
	}
	var errs []string
	for _, e := range v.Errors {
		errs = append(errs, e.Name)
	}
	// u has too many slices; g, q and z (joined) overflow.
	if want := []string{"u", "g", "q", "z1", "z2"}; !slices.Equal(errs, want) {
		t.Errorf("errors for %v, want %v: %v", errs, want, v.Errors)
	}
}

// expertStacks is a small hostile file: n stacks of e zero-byte experts.
func expertStacks(n int, e uint64) []safetensors.TensorInfo {
	in := make([]safetensors.TensorInfo, n)
	for i := range in {
		in[i] = safetensors.TensorInfo{Name: "layers." + strings.Repeat("9", i+1) + ".moe.experts.w1", DType: safetensors.BF16, Shape: []uint64{e, 0, 8}}
	}
	return in
}

// TestWorkBound: however few bytes the stacks hold, each slice counts, so
// a view stops at a bound proportional to the physical tensors, before
// doing the work of a stack that would pass it.
func TestWorkBound(t *testing.T) {
	bound := func(physical int) int { return (workBase + workPerTensor*physical) / tensorUnits }
	tests := []struct {
		name     string
		in       []safetensors.TensorInfo
		min, max int // tensors in the view
	}{
		{"many small stacks", expertStacks(40, 4096), bound(40) - 4096, bound(40)},
		{"stacks of 65536 experts", expertStacks(40, maxSlices), 0, 0},
	}
	for _, tt := range tests {
		v := Chain{preset("torchtitan-qwen3")}.Apply(tt.in, nil)
		if n := len(v.Tensors); !v.Truncated || n < tt.min || n > tt.max {
			t.Errorf("%s: %d tensors, truncated %v; want %d to %d", tt.name, n, v.Truncated, tt.min, tt.max)
		}
		if n := len(v.Errors); n != 1 || !strings.Contains(v.Errors[0].Message, "the bound for 40 physical tensors") {
			t.Errorf("%s: errors %v", tt.name, v.Errors)
		}
	}
	// A large MoE (48 layers of 512 experts) is inside it.
	moe := make([]safetensors.TensorInfo, 0, 48*10)
	for l := range 48 {
		layer := "layers." + strings.Repeat("1", l+1)
		for _, w := range []string{"w1", "w2", "w3"} {
			moe = append(moe, f32(layer+".moe.experts."+w, 0, 512, 4, 4))
		}
		for _, w := range []string{"wq", "wk", "wv", "wo", "q_norm", "k_norm"} {
			moe = append(moe, f32(layer+".attention."+w+".weight", 0, 4, 4))
		}
		moe = append(moe, f32(layer+".moe.router.gate.weight", 0, 4, 4))
	}
	if v := (Chain{preset("torchtitan-qwen3")}).Apply(moe, nil); v.Truncated || len(v.Errors) > 0 || len(v.Tensors) != 48*(3*512+7) {
		t.Errorf("a 48-layer, 512-expert MoE: %d tensors, truncated %v, %v", len(v.Tensors), v.Truncated, v.Errors)
	}
	// So are Llama 3 405B's rotary permutes: a segment a row of wq and wk.
	var dense []safetensors.TensorInfo
	for l := range 64 {
		layer := "layers." + strings.Repeat("1", l+1)
		dense = append(dense, f32(layer+".attention.wq.weight", 0, 16384, 1), f32(layer+".attention.wk.weight", 0, 1024, 1))
		for _, w := range []string{"attention.wv", "attention.wo", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3", "attention_norm", "ffn_norm"} {
			dense = append(dense, f32(layer+"."+w+".weight", 0, 4, 4))
		}
	}
	env := Env{"num_attention_heads": 128, "num_key_value_heads": 8}
	if v := (Chain{preset("torchtitan-llama3")}).Apply(dense, env); v.Truncated || len(v.Errors) > 0 || len(v.Tensors) != len(dense) {
		t.Errorf("Llama 3 405B layers: %d tensors, truncated %v, %v", len(v.Tensors), v.Truncated, v.Errors)
	}
}

func TestApplyLimit(t *testing.T) {
	stack := f32("layers.0.moe.experts.w1", 0, 8, 2, 2)
	tests := []struct {
		name      string
		chain     string
		in        []safetensors.TensorInfo
		limit     int
		wantN     int
		truncated bool
	}{
		{"no limit", "torchtitan-qwen3", []safetensors.TensorInfo{stack}, 0, 8, false},
		{"room", "torchtitan-qwen3", []safetensors.TensorInfo{stack, f32("norm.weight", 0, 1)}, 9, 9, false},
		{"the stack does not fit", "torchtitan-qwen3", []safetensors.TensorInfo{f32("norm.weight", 0, 1), stack, f32("x", 0, 1)}, 8, 1, true},
		{"physical tensors past the limit", "hf", infos("a", "b", "c"), 2, 2, true},
		{"a pass-through past the limit", "ddp", infos("a", "b", "c"), 2, 2, true},
	}
	for _, tt := range tests {
		v := mustChain(t, tt.chain).ApplyLimit(tt.in, nil, tt.limit)
		if len(v.Tensors) != tt.wantN || v.Truncated != tt.truncated || (len(v.Errors) > 0) != tt.truncated {
			t.Errorf("%s: %v, truncated %v, errors %v", tt.name, names(v), v.Truncated, v.Errors)
		}
	}
	// The limit stops the work: 15 stacks of 64 fit in 1000, the 16th does
	// not, and the rest are not looked at.
	v := Chain{preset("torchtitan-qwen3")}.ApplyLimit(expertStacks(40, 64), nil, 1000)
	if !v.Truncated || len(v.Tensors) != 15*64 || len(v.Errors) != 1 || !strings.Contains(v.Errors[0].Message, "more than 1000 logical tensors") {
		t.Errorf("%d tensors, %v", len(v.Tensors), v.Errors)
	}
}

func BenchmarkApplyMoE(b *testing.B) {
	var in []safetensors.TensorInfo
	for l := range 48 {
		for _, w := range []string{"w1", "w2", "w3"} {
			in = append(in, f32("layers."+strings.Repeat("1", l+1)+".moe.experts."+w, 0, 128, 64, 32))
		}
		in = append(in, f32("layers."+strings.Repeat("1", l+1)+".attention.wq.weight", 0, 64, 64))
	}
	c := Chain{preset("torchtitan-qwen3")}
	for b.Loop() {
		c.Apply(in, nil)
	}
}
