package verify

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

func compareValues(t *testing.T, pub, exp string, opt DiffOptions, vopt ValueOptions) (*ValueReport, []Finding) {
	t.Helper()
	rep, err := diffPaths(t, pub, exp, opt).CompareValues(context.Background(), vopt)
	if err != nil {
		t.Fatal(err)
	}
	fs := rep.Findings
	return rep, fs
}

func codesOf(fs []Finding) map[Code]int {
	m := map[Code]int{}
	for _, f := range fs {
		m[f.Code]++
	}
	return m
}

func mapTensors(ts []fixture.Tensor, f func(fixture.Tensor) fixture.Tensor) []fixture.Tensor {
	out := make([]fixture.Tensor, len(ts))
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
		export []fixture.Tensor
		policy ValuePolicy
		want   map[Code]int
		check  func(t *testing.T, rep *ValueReport, fs []Finding)
	}{
		{name: "exact F32 upcast", export: upcastAll(bf16), want: map[Code]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.Compared != len(bf16) || rep.Equal != len(bf16) || rep.BitIdentical != 0 {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "bit-identical", export: bf16, want: map[Code]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.BitIdentical != len(bf16) {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "1e-3 perturbation, exact", want: map[Code]int{CodeValueMismatch: len(bf16)},
			export: mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 5) })},
		{name: "1e-3 perturbation, rtol 1e-2", policy: rtol, want: map[Code]int{},
			export: mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 5) }),
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
			want: map[Code]int{CodeReinitialized: matrices, CodeValueMismatch: len(bf16) - matrices}},
		{name: "NaN", want: map[Code]int{CodeValueMismatch: 1, CodeNonFinite: 1},
			export: mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor {
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
				// Element 70 of the [64, 32] up_proj is row 2, column 6.
				if f := only(t, fs, CodeValueMismatch); f != nil && !strings.Contains(f.Message, "[2, 6]") {
					t.Errorf("message %q should point at [2, 6]", f.Message)
				}
			}},
		{name: "tied head copy", export: append(slices.Clone(bf16), head), want: map[Code]int{}},
		{name: "tied head perturbed", want: map[Code]int{CodeTiedWeightMismatch: 1},
			export: append(slices.Clone(bf16), fixture.Perturb(head, safetensors.BF16, 0.05, 3)),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if f := only(t, fs, CodeTiedWeightMismatch); f != nil &&
					(f.Key != "lm_head.weight" || !strings.Contains(f.Message, "differs from the tied model.embed_tokens.weight on the exported side")) {
					t.Errorf("finding %v", f)
				}
			}},
		{name: "unchanged under a tolerance", policy: rtol, export: bf16, want: map[Code]int{CodeUnchanged: 1},
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if f := only(t, fs, CodeUnchanged); f != nil && len(f.Keys) != len(bf16) {
					t.Errorf("%d keys unchanged, want all %d: %v", len(f.Keys), len(bf16), f)
				}
			}},
		{name: "skip rule", export: other.Tensors(safetensors.BF16),
			policy: ValuePolicy{Rules: []Rule{{Match: "*", Skip: "not round-trippable"}}}, want: map[Code]int{},
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

// only returns the one finding of code in fs, or fails the test and
// returns nil when there is none or more than one: a message check on it
// cannot pass for a finding that is not there.
func only(t *testing.T, fs []Finding, code Code) *Finding {
	t.Helper()
	var found []*Finding
	for i := range fs {
		if fs[i].Code == code {
			found = append(found, &fs[i])
		}
	}
	if len(found) != 1 {
		t.Errorf("%d %s findings, want 1: %v", len(found), code, fs)
		return nil
	}
	return found[0]
}

func mapsEqual(a, b map[Code]int) bool {
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

// compareOne compares two one-tensor checkpoints, "x" in each, through
// Diff and CompareValues, and returns the tensor's statistics.
func compareOne(t *testing.T, pub, exp fixture.Tensor, policy ValuePolicy) TensorStats {
	t.Helper()
	pub.Name, exp.Name = "x", "x"
	dir := t.TempDir()
	for side, x := range map[string]fixture.Tensor{"published": pub, "exported": exp} {
		if err := fixture.WriteFile(filepath.Join(dir, side, "model.safetensors"), []fixture.Tensor{x}, nil); err != nil {
			t.Fatal(err)
		}
	}
	rep, _ := compareValues(t, filepath.Join(dir, "published"), filepath.Join(dir, "exported"), DiffOptions{}, ValueOptions{Policy: policy})
	if len(rep.Tensors) != 1 || rep.Tensors[0].Key != "x" {
		t.Fatalf("statistics %+v, want those of x", rep.Tensors)
	}
	return rep.Tensors[0]
}

func TestEqualitySemantics(t *testing.T) {
	f32 := func(vals ...float64) fixture.Tensor {
		var b []byte
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
		return fixture.Tensor{DType: safetensors.F32, Shape: []uint64{uint64(len(vals))}, Data: b}
	}
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name       string
		p, e       fixture.Tensor
		tol        Tolerance
		mismatches uint64
		nonfinite  uint64
		bitIdent   bool
	}{
		{"NaN equals NaN, -0 equals 0", f32(0, nan, 1, inf), f32(negZero, nan, 1, inf), Tolerance{}, 0, 0, false},
		{"identical", f32(1, 2), f32(1, 2), Tolerance{}, 0, 0, true},
		{"NaN vs number", f32(1, 2), f32(nan, 2), Tolerance{}, 1, 1, false},
		{"Inf vs number", f32(1, 2), f32(1, inf), Tolerance{Rtol: 1}, 1, 1, false},
		{"-Inf vs Inf", f32(math.Inf(-1)), f32(inf), Tolerance{Rtol: 1}, 1, 0, false},
		{"atol edge", f32(1, 2), f32(1.5, 2), Tolerance{Atol: 0.5}, 0, 0, false},
		{"rtol edge", f32(2, 4), f32(2.25, 4.6), Tolerance{Rtol: 0.125}, 1, 0, false},
		{"atol + rtol", f32(10), f32(11), Tolerance{Atol: 0.5, Rtol: 0.05}, 0, 0, false},
		{"just beyond atol + rtol", f32(10), f32(11.0001), Tolerance{Atol: 0.5, Rtol: 0.05}, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compareOne(t, tt.p, tt.e, ValuePolicy{Default: tt.tol})
			if s.Mismatches != tt.mismatches || s.NonFinite != tt.nonfinite || s.BitIdentical != tt.bitIdent {
				t.Errorf("mismatches %d nonfinite %d bit-identical %v; want %d %d %v",
					s.Mismatches, s.NonFinite, s.BitIdentical, tt.mismatches, tt.nonfinite, tt.bitIdent)
			}
		})
	}
}

// TestIntegersCompareExactly: integers compare as integers, not as their
// float64 values, also across integer dtypes.
func TestIntegersCompareExactly(t *testing.T) {
	le := binary.LittleEndian
	i64 := func(d safetensors.DType, vals ...uint64) fixture.Tensor {
		var b []byte
		for _, v := range vals {
			b = le.AppendUint64(b, v)
		}
		return fixture.Tensor{DType: d, Shape: []uint64{uint64(len(vals))}, Data: b}
	}
	tests := []struct {
		name       string
		p, e       fixture.Tensor
		mismatches uint64
	}{
		// 2^62+1 and 2^62 are one float64.
		{"I64, equal as float64", i64(safetensors.I64, 1<<62+1, 7), i64(safetensors.I64, 1<<62, 7), 1},
		{"I64 against U64", i64(safetensors.I64, 1<<62+1, 7), i64(safetensors.U64, 1<<62, 7), 1},
		{"-1 against 2^64-1", i64(safetensors.I64, math.MaxUint64), i64(safetensors.U64, math.MaxUint64), 1},
		{"equal across dtypes", i64(safetensors.I64, 1<<62+1, 7), i64(safetensors.U64, 1<<62+1, 7), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := compareOne(t, tt.p, tt.e, ValuePolicy{}); s.Mismatches != tt.mismatches {
				t.Errorf("mismatches %d, want %d", s.Mismatches, tt.mismatches)
			}
		})
	}
}

func TestCompareValuesCancels(t *testing.T) {
	pub := published(t)
	d := diffPaths(t, pub, pub, DiffOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.CompareValues(ctx, ValueOptions{}); err == nil {
		t.Error("a cancelled comparison must return an error")
	}
}

func TestValuesRealFile(t *testing.T) {
	p := filepath.Join("..", "..", "shared", "realdata", "safetensors-jl", "model.with_metadata.safetensors")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real third-party files not found (present in CI): %v", err)
	}
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	tensors := len(f.Tensors)
	f.Close()
	// The file against itself: every tensor compared, and bit-identical.
	rep, fs := compareValues(t, p, p, DiffOptions{}, ValueOptions{})
	if len(fs) != 0 || rep.Compared != tensors || rep.BitIdentical != tensors {
		t.Errorf("%d tensors: %+v %v", tensors, rep, fs)
	}
}

// TestBlockingDoesNotChangeResults compares with small blocks, so that
// tensors span many, with several workers and with each set of loops (the
// vector ones where the CPU has them, the portable ones): the statistics
// must be bitwise the same as with one worker, since blocks are fixed by
// the headers, each block's sums are fixed by its lanes, and blocks merge in
// order. The exports include fine-tunes where every element moved.
func TestBlockingDoesNotChangeResults(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	f16 := mapTensors(bf16, fixture.ToF16)
	moved := func(x fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(x, 4) }
	pub := published(t)
	cases := []struct{ name, pub, exp string }{
		{"1e-3 perturbation in F32", pub, export(t, mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-3, 9) }), nil)},
		{"every element moved, BF16", pub, export(t, mapTensors(bf16, moved), nil)},
		{"every element moved, F32 upcast", pub, export(t, mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor { return fixture.Upcast(moved(x)) }), nil)},
		{"every element moved, F16", export(t, f16, nil), export(t, mapTensors(f16, moved), nil)},
	}
	defer values.SetBlocking(0, 0)()
	policy := ValuePolicy{Default: Tolerance{Rtol: 1e-2}}
	for _, c := range cases {
		for _, size := range []uint64{16, 1000} {
			values.SetBlocking(size, 0)
			want, _ := compareValues(t, c.pub, c.exp, DiffOptions{}, ValueOptions{Policy: policy, Workers: 1, ReadAhead: 1})
			for _, m := range []bool{false, true} {
				for _, workers := range []int{1, 2, 3, 8} {
					var got *ValueReport
					restore := values.UseKernels(m)
					got, _ = compareValues(t, c.pub, c.exp, DiffOptions{}, ValueOptions{Policy: policy, Workers: workers, ReadAhead: workers})
					restore()
					if !reflect.DeepEqual(got.Tensors, want.Tensors) {
						t.Errorf("%s, blocks of %d, portable kernels %v, %d workers: statistics differ from 1 worker", c.name, size, m, workers)
					}
				}
			}
		}
	}
	// Larger blocks sum in another order: equal within rounding.
	values.SetBlocking(16, 0)
	want, _ := compareValues(t, pub, cases[0].exp, DiffOptions{}, ValueOptions{Workers: 1, ReadAhead: 1})
	values.SetBlocking(1<<18, 0)
	whole, _ := compareValues(t, pub, cases[0].exp, DiffOptions{}, ValueOptions{})
	if len(whole.Tensors) != len(want.Tensors) || len(want.Tensors) != len(bf16) {
		t.Fatalf("%d tensors with large blocks, %d with small; want %d", len(whole.Tensors), len(want.Tensors), len(bf16))
	}
	for i, w := range whole.Tensors {
		g := want.Tensors[i]
		if g.Key != w.Key || g.Mismatches != w.Mismatches || g.MaxAbsDiff != w.MaxAbsDiff || !slices.Equal(g.MaxAt, w.MaxAt) ||
			math.Abs(float64(g.RelL2-w.RelL2)) > 1e-12 || math.Abs(float64(g.Cosine-w.Cosine)) > 1e-12 {
			t.Errorf("%s: small blocks %+v\nlarge %+v", w.Key, g, w)
		}
	}
}

// TestValuesInvalidShards: a truncated export is not compared (its keys are
// "not compared", never missing); an export with trailing bytes still has
// all its data, so it is compared and keeps its error.
func TestValuesInvalidShards(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resize   int64
		compared int
		code     Code
	}{
		{"truncated", -100, 0, CodeNotCompared},
		{"trailing bytes", 64, len(fixture.Tiny.Specs()), CodeMetadataIncompleteBuffer},
	} {
		exp := export(t, fixture.Tiny.Tensors(safetensors.BF16), nil)
		resize(t, filepath.Join(exp, "model-00001-of-00001.safetensors"), tt.resize)
		d := diffPaths(t, published(t), exp, DiffOptions{})
		rep, err := d.CompareValues(context.Background(), ValueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		codes := codesOf(d.Findings)
		if rep.Compared != tt.compared || codes[tt.code] == 0 || codes[CodeMissingKey] != 0 || len(rep.Findings) != 0 {
			t.Errorf("%s: compared %d, findings %v, value findings %v", tt.name, rep.Compared, codes, rep.Findings)
		}
	}
}

// resize grows or shrinks a file by delta bytes.
func resize(t *testing.T, path string, delta int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()+delta); err != nil {
		t.Fatal(err)
	}
}

// TestProgress calls back from several workers at once (run under -race)
// and ends with every byte accounted for: one call per block read, each
// with its own running total, never past the whole.
func TestProgress(t *testing.T) {
	defer values.SetBlocking(64, 0)()
	pub := published(t)
	exp := export(t, mapTensors(fixture.Tiny.Tensors(safetensors.BF16), func(x fixture.Tensor) fixture.Tensor {
		return fixture.Perturb(x, safetensors.F32, 1e-3, 3)
	}), nil)
	d := diffPaths(t, pub, exp, DiffOptions{})
	var mu sync.Mutex
	var calls int
	var last, total int64
	seen := map[int64]bool{}
	rep, err := d.CompareValues(context.Background(), ValueOptions{Workers: 4, ReadAhead: 4, Progress: func(done, all int64) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if done <= 0 || done > all || seen[done] {
			t.Errorf("call %d: done %d of %d (seen before: %v)", calls, done, all, seen[done])
		}
		seen[done] = true
		last, total = max(last, done), all
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of 64 elements: every tensor of the fixture takes several.
	if calls <= rep.Compared || last != total || last != rep.BytesRead || total != d.ValueBytes() {
		t.Errorf("%d calls for %d tensors, last %d of %d; read %d, value bytes %d", calls, rep.Compared, last, total, rep.BytesRead, d.ValueBytes())
	}
}

// TestWithinRounding: an F32 export whose values round to the published
// BF16 ones fails an exact comparison, and the finding says which tolerance
// accepts it; one that moved further does not say so.
func TestWithinRounding(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	near := mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor {
		return fixture.Map(fixture.Upcast(x), safetensors.F32, func(i int, v float32) float32 {
			return math.Float32frombits(math.Float32bits(v) + uint32(i%0x7FFF)) // below half a BF16 ulp
		})
	})
	far := mapTensors(bf16, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.F32, 1e-1, 5) })
	for _, tt := range []struct {
		name   string
		export []fixture.Tensor
		says   bool
	}{{"within rounding", near, true}, {"beyond rounding", far, false}} {
		_, fs := compareValues(t, published(t), export(t, tt.export, nil), DiffOptions{}, ValueOptions{})
		says := 0
		for _, f := range fs {
			if f.Code == CodeValueMismatch && strings.Contains(f.Message, "within BF16 rounding") && strings.Contains(f.Message, "--rtol 0.00390625") {
				says++
			}
		}
		if tt.says != (says > 0) || (tt.says && says != codesOf(fs)[CodeValueMismatch]) {
			t.Errorf("%s: %d of %d value_mismatch findings name the rounding tolerance", tt.name, says, codesOf(fs)[CodeValueMismatch])
		}
	}
	// And that tolerance accepts it.
	rep, fs := compareValues(t, published(t), export(t, near, nil), DiffOptions{}, ValueOptions{Policy: ValuePolicy{Default: roundingTolerance(safetensors.BF16)}})
	if len(fs) != 0 || rep.WithinTolerance == 0 {
		t.Errorf("--rtol 2^-8 leaves %v", fs)
	}
}
