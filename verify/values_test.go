package verify

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func compareValues(t *testing.T, pub, exp string, opt DiffOptions, vopt ValueOptions) (*ValueReport, []Finding) {
	t.Helper()
	rep, fs, err := diffPaths(t, pub, exp, opt).CompareValues(context.Background(), vopt)
	if err != nil {
		t.Fatal(err)
	}
	return rep, fs
}

func codesOf(fs []Finding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.Code]++
	}
	return m
}

func mapTensors(ts []safetensors.Tensor, f func(safetensors.Tensor) safetensors.Tensor) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		out[i] = f(t)
	}
	return out
}

func TestValueScenarios(t *testing.T) {
	q := fixture.Tiny
	bf16 := q.Tensors(safetensors.BF16)
	matrices := 0
	for _, x := range bf16 {
		if len(x.Shape) == 2 {
			matrices++
		}
	}
	other := q
	other.Seed = 99
	rtol := ValuePolicy{Default: Tolerance{Rtol: 1e-2}}
	head := bf16[0]
	head.Name = "lm_head.weight"

	tests := []struct {
		name   string
		export []safetensors.Tensor
		policy ValuePolicy
		want   map[string]int
		check  func(t *testing.T, rep *ValueReport, fs []Finding)
	}{
		{name: "exact F32 upcast", export: upcastAll(bf16), want: map[string]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.Compared != len(bf16) || rep.Equal != len(bf16) || rep.BitIdentical != 0 {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "bit-identical", export: bf16, want: map[string]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.BitIdentical != len(bf16) {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "1e-3 perturbation, exact", want: map[string]int{CodeValueMismatch: len(bf16)},
			export: mapTensors(bf16, func(x safetensors.Tensor) safetensors.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 5) })},
		{name: "1e-3 perturbation, rtol 1e-2", policy: rtol, want: map[string]int{},
			export: mapTensors(bf16, func(x safetensors.Tensor) safetensors.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 5) }),
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.WithinTolerance != len(bf16) {
					t.Errorf("%+v", rep)
				}
				for _, s := range rep.Tensors {
					if s.RelL2 > 1e-3 || s.Cosine < 0.999 || s.MaxAbsDiff == 0 || s.MaxAt == nil {
						t.Errorf("%s: rel L2 %v cosine %v max %v at %v", s.Key, s.RelL2, s.Cosine, s.MaxAbsDiff, s.MaxAt)
					}
				}
			}},
		{name: "another seed", policy: rtol, export: other.Tensors(safetensors.BF16),
			want: map[string]int{CodeReinitialized: matrices, CodeValueMismatch: len(bf16) - matrices}},
		{name: "NaN", want: map[string]int{CodeValueMismatch: 1, CodeNonFinite: 1},
			export: mapTensors(bf16, func(x safetensors.Tensor) safetensors.Tensor {
				if x.Name != "model.layers.1.mlp.up_proj.weight" {
					return x
				}
				return fixture.Map(x, safetensors.BF16, func(i int, v float32) float32 {
					if i == 70 {
						return float32(math.NaN())
					}
					return v
				})
			}),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				for _, f := range fs {
					if f.Code == CodeValueMismatch && !strings.Contains(f.Message, "[2, 6]") {
						t.Errorf("message %q should point at [2, 6]", f.Message)
					}
				}
			}},
		{name: "tied head copy", export: append(slices.Clone(bf16), head), want: map[string]int{}},
		{name: "tied head perturbed", want: map[string]int{CodeTiedWeightMismatch: 1},
			export: append(slices.Clone(bf16), fixture.Perturb(head, safetensors.BF16, 0.05, 3)),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if !strings.Contains(fs[0].Message, "differs from the tied model.embed_tokens.weight on the exported side") {
					t.Errorf("message %q", fs[0].Message)
				}
			}},
		{name: "unchanged under a tolerance", policy: rtol, export: bf16, want: map[string]int{CodeUnchanged: 1},
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if len(fs) != 1 || len(fs[0].Keys) != len(bf16) {
					t.Errorf("%v", fs)
				}
			}},
		{name: "skip rule", export: other.Tensors(safetensors.BF16),
			policy: ValuePolicy{Rules: []Rule{{Match: "*", Skip: "not round-trippable"}}}, want: map[string]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.Skipped != len(bf16) || rep.Compared != 0 {
					t.Errorf("%+v", rep)
				}
			}},
	}
	pub := published(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, fs := compareValues(t, pub, export(t, tt.export, nil), DiffOptions{}, ValueOptions{Policy: tt.policy})
			if got := codesOf(fs); !mapsEqual(got, tt.want) {
				t.Errorf("codes %v, want %v\n%v", got, tt.want, fs)
			}
			if tt.check != nil {
				tt.check(t, rep, fs)
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestEqualitySemantics(t *testing.T) {
	f32 := func(vals ...float64) []byte {
		var b []byte
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
		return b
	}
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name       string
		p, e       []byte
		tol        Tolerance
		mismatches uint64
		nonfinite  uint64
		bitIdent   bool
	}{
		{"NaN equals NaN, -0 equals 0", f32(0, nan, 1, inf), f32(negZero, nan, 1, inf), Tolerance{}, 0, 0, false},
		{"identical", f32(1, 2), f32(1, 2), Tolerance{}, 0, 0, true},
		{"NaN vs number", f32(1, 2), f32(nan, 2), Tolerance{}, 1, 1, false},
		{"Inf vs number", f32(1, 2), f32(1, inf), Tolerance{Rtol: 1}, 1, 1, false},
		{"atol edge", f32(1, 2), f32(1.5, 2), Tolerance{Atol: 0.5}, 0, 0, false},
		{"rtol edge", f32(2, 4), f32(2.25, 4.6), Tolerance{Rtol: 0.125}, 1, 0, false},
		{"atol + rtol", f32(10), f32(11), Tolerance{Atol: 0.5, Rtol: 0.05}, 0, 0, false},
	}
	for _, tt := range tests {
		c := &comparison{tol: tt.tol}
		c.pub.t = adapter.Tensor{DType: safetensors.F32, Shape: []uint64{uint64(len(tt.p) / 4)}}
		c.exp.t = c.pub.t
		n := uint64(len(tt.p) / 4)
		c.parts = []partial{(&worker{}).compare(chunk{c: c, len: n}, tt.p, tt.e)}
		c.finish()
		s := c.stats
		if s.Mismatches != tt.mismatches || s.NonFinite != tt.nonfinite || s.BitIdentical != tt.bitIdent {
			t.Errorf("%s: mismatches %d nonfinite %d bit-identical %v", tt.name, s.Mismatches, s.NonFinite, s.BitIdentical)
		}
	}
}

func TestIntegersCompareExactly(t *testing.T) {
	le := binary.LittleEndian
	p := le.AppendUint64(le.AppendUint64(nil, 1<<62+1), 7)
	e := le.AppendUint64(le.AppendUint64(nil, 1<<62), 7) // equal as float64, not as integers
	c := &comparison{}
	c.pub.t = adapter.Tensor{DType: safetensors.I64, Shape: []uint64{2}}
	c.exp.t = adapter.Tensor{DType: safetensors.U64, Shape: []uint64{2}}
	c.parts = []partial{(&worker{}).compare(chunk{c: c, len: 2}, p, e)}
	c.finish()
	if c.stats.Mismatches != 1 {
		t.Errorf("mismatches %d, want 1", c.stats.Mismatches)
	}
}

func TestMultiSegmentRead(t *testing.T) {
	dir := t.TempDir()
	data := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	fixture.WriteFile(filepath.Join(dir, "a.safetensors"), []safetensors.Tensor{{Name: "x", DType: safetensors.U8, Shape: []uint64{10}, Data: data}}, nil)
	c, err := safetensors.OpenCheckpoint(filepath.Join(dir, "a.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := sources(c)
	// Rows 2..3 then 0..1 of a [5, 2] tensor: a row permutation.
	op := operand{t: adapter.Tensor{Name: "y", DType: safetensors.U8, Shape: []uint64{2, 2},
		Segments: []adapter.Segment{{Source: 0, Offset: 4, Length: 2}, {Source: 0, Offset: 0, Length: 2}}}, src: src}
	buf := make([]byte, 3)
	if err := op.read(buf, 1); err != nil || !slices.Equal(buf, []byte{5, 0, 1}) {
		t.Errorf("read = %v, %v", buf, err)
	}
	if err := op.read(make([]byte, 4), 1); err == nil {
		t.Error("a read past the segments must fail")
	}
}

func TestCompareValuesCancels(t *testing.T) {
	p, _ := safetensors.OpenCheckpoint(published(t))
	defer p.Close()
	d := Diff(p, p, DiffOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := d.CompareValues(ctx, ValueOptions{}); err == nil {
		t.Error("a cancelled comparison must return an error")
	}
}

func TestValuesRealFile(t *testing.T) {
	p := filepath.Join("..", "..", "shared", "realdata", "safetensors-jl", "model.with_metadata.safetensors")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real third-party files not found (present in CI): %v", err)
	}
	rep, fs := compareValues(t, p, p, DiffOptions{}, ValueOptions{})
	if len(fs) != 0 || rep.BitIdentical != rep.Compared || rep.Compared != 36 {
		t.Errorf("%+v %v", rep, fs)
	}
}

func TestReadPolicy(t *testing.T) {
	p, err := ReadPolicy(strings.NewReader(`{"default":{"atol":1e-6},"rules":[{"match":"model.layers.*.mlp.gate.weight","rtol":1e-2},{"match":"*.expert_bias","skip":"not round-trippable"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tol, skip := p.For("model.layers.3.mlp.gate.weight"); tol != (Tolerance{Atol: 1e-6, Rtol: 1e-2}) || skip != "" {
		t.Errorf("gate: %v %q", tol, skip)
	}
	if _, skip := p.For("model.layers.3.mlp.expert_bias"); skip != "not round-trippable" {
		t.Errorf("skip %q", skip)
	}
	if tol, _ := p.For("model.norm.weight"); tol != (Tolerance{Atol: 1e-6}) || !p.Tolerant() {
		t.Errorf("default %v", tol)
	}
	for _, bad := range []string{`{`, `{"rules":[{"match":"["}]}`, `{"rules":[{"match":"*","rtol":-1}]}`, `{"rulez":[]}`, `{"default":{"atol":-1}}`} {
		if _, err := ReadPolicy(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

func FuzzReadPolicy(f *testing.F) {
	f.Add([]byte(`{"rules":[{"match":"*.w","rtol":1e-2},{"match":"*","skip":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadPolicy(strings.NewReader(string(b)))
		if err == nil {
			p.For("model.layers.0.mlp.gate.weight")
		}
	})
}

func TestBF16UpcastEqual(t *testing.T) {
	const n = 37 // words and a tail
	p := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(p[2*i:], uint16(0x3F80+i*7))
	}
	e := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(e[4*i:], uint32(binary.LittleEndian.Uint16(p[2*i:]))<<16)
	}
	if !bf16UpcastEqual(p, e) {
		t.Fatal("an exact upcast must compare equal")
	}
	for i := range 4 * n {
		e[i] ^= 1
		if bf16UpcastEqual(p, e) {
			t.Errorf("a flipped bit in byte %d went unnoticed", i)
		}
		e[i] ^= 1
	}
	// Unaligned slices take the bytewise path.
	if !bf16UpcastEqual(append([]byte{0}, p...)[1:], append([]byte{0}, e...)[1:]) {
		t.Error("unaligned exact upcast must compare equal")
	}
}

// TestChunkingDoesNotChangeResults compares with tiny pieces and few work
// items per tensor, so that items span many pieces and tensors many items.
func TestChunkingDoesNotChangeResults(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	exp := export(t, mapTensors(bf16, func(x safetensors.Tensor) safetensors.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 9) }), nil)
	pub := published(t)
	want, _ := compareValues(t, pub, exp, DiffOptions{}, ValueOptions{})
	defer func(c, m uint64) { chunkElems, maxParts = c, m }(chunkElems, maxParts)
	chunkElems, maxParts = 16, 3
	got, _ := compareValues(t, pub, exp, DiffOptions{}, ValueOptions{Workers: 3})
	for i, w := range want.Tensors {
		g := got.Tensors[i]
		if g.Key != w.Key || g.Mismatches != w.Mismatches || g.MaxAbsDiff != w.MaxAbsDiff || !slices.Equal(g.MaxAt, w.MaxAt) ||
			math.Abs(float64(g.RelL2-w.RelL2)) > 1e-12 || math.Abs(float64(g.Cosine-w.Cosine)) > 1e-12 {
			t.Errorf("%s: chunked %+v\nwhole %+v", w.Key, g, w)
		}
	}
	// Pass 1 stops at a tensor's first differing piece: smaller pieces, less read.
	if got.BytesRead > want.BytesRead {
		t.Errorf("read %d bytes chunked, %d whole", got.BytesRead, want.BytesRead)
	}
}

func TestValuesSkipInvalidShards(t *testing.T) {
	exp := export(t, fixture.Tiny.Tensors(safetensors.BF16), nil)
	p := filepath.Join(exp, "model-00001-of-00001.safetensors")
	st, _ := os.Stat(p)
	os.Truncate(p, st.Size()-100)
	rep, fs := compareValues(t, published(t), exp, DiffOptions{}, ValueOptions{})
	if rep.Compared != 0 || rep.Skipped != len(fixture.Tiny.Specs()) || len(fs) != 0 ||
		!strings.Contains(rep.Tensors[0].Skipped, "failed validation") {
		t.Errorf("%+v %v", rep, fs)
	}
}
