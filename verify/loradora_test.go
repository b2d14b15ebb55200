package verify

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The DoRA fixtures follow peft's merge (see loradora.go): the BF16 path
// rounds Δ, W + Δ, the row norm, the factor and the product to BF16 in
// turn (a BF16 adapter, merge_safe); the upcast path computes in float32
// and rounds once to the model's BF16.

// withDoRA gives each target a trained magnitude: the row norm of
// W + s·B·A, the initial magnitude, moved by 5–35% a row.
func (f *loraFixture) withDoRA(seed uint64) *loraFixture {
	rng := rand.New(rand.NewPCG(seed, 11))
	f.mag = map[string][]float32{}
	for _, t := range f.targets {
		d := deltaF32(f.b[t], f.a[t], loraH, loraH, loraR, f.scale)
		w := f.base[t+".weight"]
		mag := make([]float32, loraH)
		for o := range loraH {
			var n2 float64
			for j := range loraH {
				v := float64(w[o*loraH+j] + d[o*loraH+j])
				n2 += v * v
			}
			sign := float64(1 - 2*rng.IntN(2))
			mag[o] = bf16(float32(math.Sqrt(n2) * (1 + sign*(0.05+0.3*rng.Float64()))))
		}
		f.mag[t] = mag
	}
	return f
}

// mergedDoRA is peft's DoRA merge with scale (the adapter's, or a wrong one).
func (f *loraFixture) mergedDoRA(upcast bool, scale float32) map[string][]float32 {
	out := f.merged(true, scale, map[string]string{f.targets[0]: "", f.targets[1]: ""}) // the base, lm_head saved
	round := func(v float32) float32 {
		if upcast {
			return v
		}
		return bf16(v)
	}
	for _, t := range f.targets {
		d := deltaF32(f.b[t], f.a[t], loraH, loraH, loraR, scale)
		w := out[t+".weight"]
		v := make([]float32, loraH)
		for o := range loraH {
			var n2 float32
			for j := range loraH {
				v[j] = round(w[o*loraH+j] + round(d[o*loraH+j]))
				n2 += v[j] * v[j]
			}
			factor := round(f.mag[t][o] / round(float32(math.Sqrt(float64(n2)))))
			for j := range loraH {
				w[o*loraH+j] = bf16(factor * v[j])
			}
		}
	}
	return out
}

func TestCompareDoRA(t *testing.T) {
	const q, v = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.weight"
	tests := []struct {
		name   string
		merged func(f *loraFixture) map[string][]float32
		want   Code   // on both targets; "" none
		msg    string // in the messages
	}{
		{name: "bf16 path", merged: func(f *loraFixture) map[string][]float32 { return f.mergedDoRA(false, f.scale) }},
		{name: "upcast path", merged: func(f *loraFixture) map[string][]float32 { return f.mergedDoRA(true, f.scale) }},
		{name: "magnitude forgotten", merged: func(f *loraFixture) map[string][]float32 { return f.merged(true, f.scale, nil) },
			want: CodeLoRAMergeMismatch, msg: "merged as plain LoRA"},
		{name: "alpha instead of alpha/r", merged: func(f *loraFixture) map[string][]float32 { return f.mergedDoRA(true, loraAlpha) },
			want: CodeLoRAMergeMismatch, msg: "neither the base nor DoRA's"},
		{name: "merge is the base", merged: func(f *loraFixture) map[string][]float32 {
			return f.merged(true, f.scale, map[string]string{f.targets[0]: "", f.targets[1]: ""})
		}, want: CodeLoRANotMerged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(3) {
				f := newLoRAFixture(seed+1, false).withDoRA(seed)
				base := openCk(t, f.write(t, t.TempDir(), f.base))
				merged := openCk(t, f.write(t, t.TempDir(), tc.merged(f)))
				ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
				rep := compareLoRA(t, base, merged, ad, LoRAOptions{})
				got := codesByKey(rep.Findings)
				if tc.want == "" {
					if len(rep.Findings) != 0 {
						t.Fatalf("seed %d: findings %v", seed, rep.Findings)
					}
					for _, tg := range rep.Targets {
						if tg.Verdict != "merged" || !(tg.RelResidual < tg.RelFloor) {
							t.Errorf("seed %d: %+v", seed, tg)
						}
					}
					continue
				}
				if len(got) != 2 || len(got[q]) != 1 || got[q][0] != tc.want || len(got[v]) != 1 || got[v][0] != tc.want {
					t.Fatalf("seed %d: findings %v, want %s on both targets", seed, rep.Findings, tc.want)
				}
				for _, fd := range rep.Findings {
					if !strings.Contains(fd.Message, tc.msg) {
						t.Errorf("seed %d: %q does not say %q", seed, fd.Message, tc.msg)
					}
				}
			}
		})
	}
}

// TestDoRAMagnitudeShape: a magnitude that is not [out] is a shape
// mismatch, found before any value is read.
func TestDoRAMagnitudeShape(t *testing.T) {
	f := newLoRAFixture(1, false).withDoRA(1)
	f.mag[f.targets[0]] = f.mag[f.targets[0]][:loraH-1]
	base := openCk(t, f.write(t, t.TempDir(), f.base))
	ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
	fs, err := CheckAdapter(base, ad)
	if err != nil {
		t.Fatal(err)
	}
	if got := codesByKey(fs)[f.targets[0]+".weight"]; len(got) != 1 || got[0] != CodeLoRAShapeMismatch || len(fs) != 1 {
		t.Fatalf("findings %v", fs)
	}
}
