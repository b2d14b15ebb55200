package verify

import (
	"math/rand/v2"
	"testing"
)

// withEmbedding gives the adapter a LoRA of embed_tokens as peft saves an
// Embedding's (see embeddingPair).
func (f *loraFixture) withEmbedding(seed uint64) *loraFixture {
	rng := rand.New(rand.NewPCG(seed, 13))
	f.embA, f.embB = gauss(rng, loraR*loraV, 0.5), gauss(rng, loraH*loraR, 0.01)
	return f
}

// mergeEmbedding adds peft's Embedding delta, transpose(B @ A)·scale in
// float32, to the merged embed_tokens, rounding once to BF16.
func (f *loraFixture) mergeEmbedding(m map[string][]float32, scale float32, transposed bool) map[string][]float32 {
	const w = "model.embed_tokens.weight"
	out := append([]float32(nil), m[w]...)
	for v := range loraV {
		for d := range loraH {
			var s float32
			for i := range loraR {
				if transposed { // B·A's elements taken in the wrong order: a wrong delta
					s += f.embB[(v*loraH/loraV)*loraR+i] * f.embA[i*loraV+d%loraV]
				} else {
					s += f.embB[d*loraR+i] * f.embA[i*loraV+v]
				}
			}
			out[v*loraH+d] = bf16(out[v*loraH+d] + s*scale)
		}
	}
	m[w] = out
	return m
}

func TestCompareLoRAEmbedding(t *testing.T) {
	const emb = "model.embed_tokens.weight"
	tests := []struct {
		name   string
		merged func(f *loraFixture) map[string][]float32
		want   Code
	}{
		{name: "merged", merged: func(f *loraFixture) map[string][]float32 {
			return f.mergeEmbedding(f.merged(true, f.scale, nil), f.scale, false)
		}},
		{name: "embedding not merged", merged: func(f *loraFixture) map[string][]float32 { return f.merged(true, f.scale, nil) },
			want: CodeLoRANotMerged},
		{name: "alpha instead of alpha/r", merged: func(f *loraFixture) map[string][]float32 {
			return f.mergeEmbedding(f.merged(true, f.scale, nil), loraAlpha, false)
		}, want: CodeLoRAMergeMismatch},
		{name: "a wrong delta", merged: func(f *loraFixture) map[string][]float32 {
			return f.mergeEmbedding(f.merged(true, f.scale, nil), f.scale, true)
		}, want: CodeLoRAMergeMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLoRAFixture(4, false).withEmbedding(4)
			base := openCk(t, f.write(t, t.TempDir(), f.base))
			merged := openCk(t, f.write(t, t.TempDir(), tc.merged(f)))
			ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
			for _, k := range []int{1, 3} {
				rep := compareLoRA(t, base, merged, ad, LoRAOptions{Probes: k})
				got := codesByKey(rep.Findings)
				if tc.want == "" {
					if len(rep.Findings) != 0 || len(rep.Targets) != 3 {
						t.Fatalf("k=%d: findings %v, targets %+v", k, rep.Findings, rep.Targets)
					}
					continue
				}
				if len(got) != 1 || len(got[emb]) != 1 || got[emb][0] != tc.want {
					t.Fatalf("k=%d: findings %v, want %s on %s", k, rep.Findings, tc.want, emb)
				}
			}
		})
	}
}
