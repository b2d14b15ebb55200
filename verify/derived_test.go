package verify

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// fineTuned is the published Tiny model as `make bench` fine-tunes it:
// every element moved 1 to 4 ulps.
func fineTuned() []fixture.Tensor {
	return mapTensors(fixture.Tiny.Tensors(safetensors.BF16), func(x fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(x, 4) })
}

// replaceTensor returns ts with the tensor named name replaced by f's.
func replaceTensor(ts []fixture.Tensor, name string, f func(fixture.Tensor) fixture.Tensor) []fixture.Tensor {
	out := slices.Clone(ts)
	for i := range out {
		if out[i].Name == name {
			out[i] = f(out[i])
		}
	}
	return out
}

// tensorNamed is the tensor of ts named name.
func tensorNamed(ts []fixture.Tensor, name string) fixture.Tensor {
	for _, x := range ts {
		if x.Name == name {
			return x
		}
	}
	panic("no " + name)
}

// swapTensors returns ts with the values of tensors a and b exchanged.
func swapTensors(ts []fixture.Tensor, a, b string) []fixture.Tensor {
	va, vb := tensorNamed(ts, a), tensorNamed(ts, b)
	out := replaceTensor(ts, a, func(x fixture.Tensor) fixture.Tensor { vb.Name = x.Name; return vb })
	return replaceTensor(out, b, func(x fixture.Tensor) fixture.Tensor { va.Name = x.Name; return va })
}

// transpose2D is a square 2-byte-element matrix transposed.
func transpose2D(x fixture.Tensor) fixture.Tensor {
	n := x.Shape[0]
	data := make([]byte, len(x.Data))
	for i := range n {
		for j := range n {
			copy(data[2*(j*n+i):], x.Data[2*(i*n+j):2*(i*n+j)+2])
		}
	}
	x.Data = data
	return x
}

// findingKeys are the sorted keys of the findings of code.
func findingKeys(fs []Finding, code Code) []string {
	var keys []string
	for _, f := range fs {
		if f.Code == code {
			keys = append(keys, f.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func TestExpectDerived(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	matrices := 0
	for _, x := range bf16 {
		if len(x.Shape) == 2 {
			matrices++
		}
	}
	other := fixture.Tiny
	other.Seed = 99
	const up0, up1 = "model.layers.0.mlp.up_proj.weight", "model.layers.1.mlp.up_proj.weight"
	// q_proj is square in Tiny: its transpose has its shape.
	const q0, q1 = "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.weight"
	tuned := fineTuned()
	var up1Data fixture.Tensor
	for _, x := range tuned {
		if x.Name == up1 {
			up1Data = x
		}
	}
	derived := ValuePolicy{Expect: ExpectDerived}
	wider, lower := 0.6, 0.85
	tests := []struct {
		name   string
		export []fixture.Tensor
		policy ValuePolicy
		want   map[Code]int
		check  func(t *testing.T, rep *ValueReport, fs []Finding)
	}{
		{name: "fine-tune: every element moved 1-4 ulps", export: tuned, want: map[Code]int{},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				if rep.Expect != ExpectDerived || rep.WithinTolerance != len(bf16) || rep.Mismatched != 0 {
					t.Errorf("%+v", rep)
				}
				for _, s := range rep.Tensors {
					if s.Bound == nil || *s.Bound != DefaultDrift || s.RelL2 > 0.05 {
						t.Errorf("%s: bound %v, rel L2 %v", s.Key, s.Bound, s.RelL2)
					}
				}
			}},
		{name: "fine-tune upcast to F32", export: upcastAll(tuned), want: map[Code]int{}},
		{name: "re-initialized", export: other.Tensors(safetensors.BF16), want: map[Code]int{CodeReinitialized: matrices},
			check: func(t *testing.T, rep *ValueReport, _ []Finding) {
				// The norms are near one in every seed: within the bound.
				if rep.Mismatched != matrices || rep.WithinTolerance != len(bf16)-matrices {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "one tensor is another's", export: replaceTensor(tuned, up0, func(x fixture.Tensor) fixture.Tensor {
			y := up1Data
			y.Name = x.Name
			return y
		}), want: map[Code]int{CodeReinitialized: 1},
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if f := only(t, fs, CodeReinitialized); f != nil && f.Key != up0 {
					t.Errorf("finding %v", f)
				}
			}},
		{name: "two layers' tensors swapped", want: map[Code]int{CodeReinitialized: 2},
			export: swapTensors(tuned, q0, q1),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if keys := findingKeys(fs, CodeReinitialized); !slices.Equal(keys, []string{q0, q1}) {
					t.Errorf("reinitialized %v", keys)
				}
			}},
		{name: "one tensor re-initialized", want: map[Code]int{CodeReinitialized: 1},
			export: replaceTensor(tuned, q0, func(fixture.Tensor) fixture.Tensor { return tensorNamed(other.Tensors(safetensors.BF16), q0) }),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if keys := findingKeys(fs, CodeReinitialized); !slices.Equal(keys, []string{q0}) {
					t.Errorf("reinitialized %v", keys)
				}
			}},
		{name: "one tensor transposed", want: map[Code]int{CodeReinitialized: 1},
			export: replaceTensor(tuned, q0, transpose2D)},
		{name: "one tensor scaled x2", want: map[Code]int{CodeDriftExcessive: 1},
			export: replaceTensor(tuned, q0, func(x fixture.Tensor) fixture.Tensor {
				return fixture.Map(x, safetensors.BF16, func(_ int, v float32) float32 { return 2 * v })
			}),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				// The direction is the published one: the relative L2 judges.
				if f := only(t, fs, CodeDriftExcessive); f != nil && (f.Key != q0 || !strings.Contains(f.Message, "> 0.25") || strings.Contains(f.Message, "cosine")) {
					t.Errorf("finding %v", f)
				}
			}},
		{name: "one tensor scaled x0.5", want: map[Code]int{CodeDriftExcessive: 1},
			export: replaceTensor(tuned, q0, func(x fixture.Tensor) fixture.Tensor {
				return fixture.Map(x, safetensors.BF16, func(_ int, v float32) float32 { return v / 2 })
			})},
		{name: "one tensor moved far beyond training", want: map[Code]int{CodeDriftExcessive: 1},
			export: replaceTensor(tuned, up0, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.BF16, 0.8, 3) }),
			check: func(t *testing.T, rep *ValueReport, fs []Finding) {
				f := only(t, fs, CodeDriftExcessive)
				if f == nil {
					return
				}
				got, _ := f.Got.(map[string]any)
				want, _ := f.Expected.(map[string]any)
				if f.Key != up0 || f.Severity != Error || got["rel_l2"] == nil || got["cosine"] == nil ||
					want["max_rel_l2"] != 0.25 || want["min_cosine"] != 0.95 || !strings.Contains(f.Message, "relative L2") {
					t.Errorf("finding %+v", f)
				}
				if rep.Mismatched != 1 || rep.WithinTolerance != len(bf16)-1 {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "a rule widens the bound", want: map[Code]int{},
			policy: ValuePolicy{Expect: ExpectDerived, Rules: []Rule{{Match: "*.up_proj.weight", MaxRelL2: &wider, MinCosine: &lower}}}.Compile(),
			export: replaceTensor(tuned, up0, func(x fixture.Tensor) fixture.Tensor { return fixture.Perturb(x, safetensors.BF16, 0.8, 3) })},
		{name: "NaN in a fine-tune", want: map[Code]int{CodeNonFinite: 1},
			export: replaceTensor(tuned, up0, func(x fixture.Tensor) fixture.Tensor {
				return fixture.Map(x, safetensors.BF16, func(i int, v float32) float32 {
					if i == 70 {
						return float32(math.NaN())
					}
					return v
				})
			})},
		{name: "exact copy", export: bf16, want: map[Code]int{CodeUnchanged: 1, CodeNotTrained: 1},
			check: func(t *testing.T, rep *ValueReport, fs []Finding) {
				if f := only(t, fs, CodeNotTrained); f != nil && f.Severity != Warning {
					t.Errorf("finding %v", f)
				}
				if rep.BitIdentical != len(bf16) {
					t.Errorf("%+v", rep)
				}
			}},
		{name: "exact F32 upcast of the published", export: upcastAll(bf16), want: map[Code]int{CodeNotTrained: 1}},
		{name: "frozen layers in a fine-tune", want: map[Code]int{CodeUnchanged: 1},
			export: replaceTensor(tuned, up0, func(fixture.Tensor) fixture.Tensor {
				for _, x := range bf16 {
					if x.Name == up0 {
						return x
					}
				}
				panic("no " + up0)
			}),
			check: func(t *testing.T, _ *ValueReport, fs []Finding) {
				if f := only(t, fs, CodeUnchanged); f != nil && (f.Severity != Info || !slices.Equal(f.Keys, []string{up0})) {
					t.Errorf("finding %v", f)
				}
			}},
	}
	pub := published(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := derived
			if tt.policy.Expect != "" {
				policy = tt.policy
			}
			rep, fs := compareValues(t, pub, export(t, tt.export, nil), DiffOptions{}, ValueOptions{Policy: policy})
			if got := codesOf(fs); !mapsEqual(got, tt.want) {
				t.Errorf("codes %v, want %v\n%v", got, tt.want, fs)
			}
			if tt.check != nil {
				tt.check(t, rep, fs)
			}
		})
	}
}

// TestExpectEqualUnchanged: without --expect derived a fine-tune still
// fails on every tensor, and the report says what was expected.
func TestExpectEqualUnchanged(t *testing.T) {
	rep, fs := compareValues(t, published(t), export(t, fineTuned(), nil), DiffOptions{}, ValueOptions{})
	if rep.Expect != ExpectEqual || codesOf(fs)[CodeValueMismatch] != len(rep.Tensors) {
		t.Errorf("expect %q, codes %v", rep.Expect, codesOf(fs))
	}
	for _, s := range rep.Tensors {
		if s.Bound != nil {
			t.Errorf("%s: a drift bound under expect equal", s.Key)
		}
	}
}

func TestDriftBoundUndefined(t *testing.T) {
	zero := fixture.Tensor{DType: safetensors.F32, Shape: []uint64{4}, Data: make([]byte, 16)}
	moved := fixture.Map(zero, safetensors.F32, func(i int, _ float32) float32 { return float32(i) * 1e-3 })
	// A zero-initialised bias that training moved has no relative drift:
	// not judged.
	if s := compareOne(t, zero, moved, ValuePolicy{Expect: ExpectDerived}); len(derivedFindings(&s)) != 0 {
		t.Errorf("%+v: %v", s, derivedFindings(&s))
	}
	// A tensor zeroed in the export moved by its whole norm.
	if s := compareOne(t, moved, zero, ValuePolicy{Expect: ExpectDerived}); len(derivedFindings(&s)) != 1 || derivedFindings(&s)[0].Code != CodeDriftExcessive {
		t.Errorf("%+v: %v", s, derivedFindings(&s))
	}
}

func TestParseExpect(t *testing.T) {
	for in, want := range map[string]Expect{"": ExpectEqual, "equal": ExpectEqual, "derived": ExpectDerived} {
		if got, err := ParseExpect(in); err != nil || got != want {
			t.Errorf("ParseExpect(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseExpect("close"); err == nil || !strings.Contains(err.Error(), "equal or derived") {
		t.Errorf("ParseExpect(close): %v", err)
	}
}

// TestMergeDerived: a derived run in partitions merges to the whole run,
// not_trained included, and expect is in the fingerprint.
func TestMergeDerived(t *testing.T) {
	pub := published(t)
	for _, exp := range []string{export(t, fineTuned(), nil), export(t, fixture.Tiny.Tensors(safetensors.BF16), nil)} {
		run := func(p Partition) *Report {
			d := diffPaths(t, pub, exp, DiffOptions{})
			policy := ValuePolicy{Expect: ExpectDerived}
			values, err := d.CompareValues(context.Background(), ValueOptions{Policy: policy, Partition: p})
			if err != nil {
				t.Fatal(err)
			}
			return roundTrip(t, NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: values, Partition: p,
				Fingerprint: d.Fingerprint(policy, nil)}))
		}
		whole := run(Partition{})
		var parts []*Report
		for i := range 3 {
			parts = append(parts, run(Partition{Index: i, Count: 3}))
		}
		merged, err := Merge(mergeInputs(parts), Error)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, "derived", merged, whole)
		if merged.Values.Expect != ExpectDerived {
			t.Errorf("merged expect %q", merged.Values.Expect)
		}
	}
	d := diffPaths(t, pub, pub, DiffOptions{})
	if d.Fingerprint(ValuePolicy{}, nil) == d.Fingerprint(ValuePolicy{Expect: ExpectDerived}, nil) {
		t.Error("expect is not in the fingerprint")
	}
	if d.Fingerprint(ValuePolicy{}, nil) != d.Fingerprint(ValuePolicy{Expect: ExpectEqual}, nil) {
		t.Error("an empty expect fingerprints unlike equal")
	}
	b := DriftBound{MaxRelL2: 0.3, MinCosine: 0.95}
	if d.Fingerprint(ValuePolicy{Expect: ExpectDerived}, nil) == d.Fingerprint(ValuePolicy{Expect: ExpectDerived, Drift: &b}, nil) {
		t.Error("the drift bound is not in the fingerprint")
	}
}
