package verify

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A llama-shaped HF checkpoint of two layers (2 query heads, 1 KV head of
// 32 dimensions, hidden 64) and its GGUF conversion as convert_hf_to_gguf
// and llama-quantize write it: q/k rows permuted, norms F32, the matrices
// Q8_0 (ffn_down Q4_0), the tied head absent.
const (
	tinyHidden, tinyHeads, tinyKV, tinyFF, tinyVocab = 64, 2, 1, 128, 32
)

type hfTensor struct {
	name, gguf string
	shape      []uint64
	vals       []float32
}

func tinyLlama() []hfTensor {
	rng := rand.New(rand.NewPCG(25, 1))
	mk := func(name, g string, shape ...uint64) hfTensor {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.05)
		}
		return hfTensor{name, g, shape, v}
	}
	ts := []hfTensor{mk("model.embed_tokens.weight", "token_embd.weight", tinyVocab, tinyHidden),
		mk("model.norm.weight", "output_norm.weight", tinyHidden)}
	for l := range 2 {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			mk(p+"self_attn.q_proj.weight", g+"attn_q.weight", tinyHeads*32, tinyHidden),
			mk(p+"self_attn.k_proj.weight", g+"attn_k.weight", tinyKV*32, tinyHidden),
			mk(p+"self_attn.v_proj.weight", g+"attn_v.weight", tinyKV*32, tinyHidden),
			mk(p+"self_attn.o_proj.weight", g+"attn_output.weight", tinyHidden, tinyHeads*32),
			mk(p+"mlp.gate_proj.weight", g+"ffn_gate.weight", tinyFF, tinyHidden),
			mk(p+"mlp.up_proj.weight", g+"ffn_up.weight", tinyFF, tinyHidden),
			mk(p+"mlp.down_proj.weight", g+"ffn_down.weight", tinyHidden, tinyFF),
			mk(p+"input_layernorm.weight", g+"attn_norm.weight", tinyHidden),
			mk(p+"post_attention_layernorm.weight", g+"ffn_norm.weight", tinyHidden))
	}
	return ts
}

// llamaPermute is convert_hf_to_gguf's LlamaModel.permute: rows
// reshape(heads, 2, rows/heads/2) swapped to (heads, rows/heads/2, 2).
func llamaPermute(v []float32, rows, cols, heads int) []float32 {
	out := make([]float32, len(v))
	half := rows / heads / 2
	for h := range heads {
		for b := range 2 {
			for a := range half {
				src, dst := h*2*half+b*half+a, h*2*half+a*2+b
				copy(out[dst*cols:(dst+1)*cols], v[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

func f16Bytes(x float32) []byte { return fixture.Encode([]float32{x}, safetensors.F16) }

// quantizeQ8_0 is quantize_row_q8_0_ref: d = amax/127, q = round(x/d).
func quantizeQ8_0(v []float32) []byte {
	var out []byte
	for b := 0; b < len(v); b += 32 {
		x := v[b : b+32]
		var amax float32
		for _, e := range x {
			amax = max(amax, float32(math.Abs(float64(e))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		out = append(out, f16Bytes(d)...)
		for _, e := range x {
			out = append(out, byte(int8(math.Round(float64(e*id)))))
		}
	}
	return out
}

// quantizeQ4_0 is quantize_row_q4_0_ref: d = max/−8 of the value of
// largest magnitude, q = min(15, trunc(x/d + 8.5)).
func quantizeQ4_0(v []float32) []byte {
	var out []byte
	for b := 0; b < len(v); b += 32 {
		x := v[b : b+32]
		var amax, mx float32
		for _, e := range x {
			if a := float32(math.Abs(float64(e))); a > amax {
				amax, mx = a, e
			}
		}
		d := mx / -8
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		q := func(e float32) byte { return byte(min(15, int8(e*id+8.5))) }
		out = append(out, f16Bytes(d)...)
		for j := range 16 {
			out = append(out, q(x[j])|q(x[j+16])<<4)
		}
	}
	return out
}

type ggufEdit struct {
	arch       string            // general.architecture; "" is llama
	unpermuted bool              // write q/k in HF row order
	swap       [2]string         // write the data of GGUF tensor [1] as [0]
	drop       string            // leave this GGUF tensor out
	halve      string            // write only the first half of this tensor's rows
	scale      string            // this tensor's block scales ×1.25
	types      map[string]uint32 // GGML type by GGUF name (default Q8_0 for matrices)
	normShift  float32           // added to every *norm.weight, as llama.cpp's Gemma converters add 1
}

func tinyGGUFOf(ts []hfTensor, e ggufEdit) w.File {
	arch := cmp.Or(e.arch, "llama")
	f := w.File{KV: []w.KV{w.P("general.architecture", w.Str(arch)), w.P(arch+".block_count", w.U32(2)),
		w.P(arch+".embedding_length", w.U32(tinyHidden)), w.P(arch+".attention.head_count", w.U32(tinyHeads)),
		w.P(arch+".attention.head_count_kv", w.U32(tinyKV))}}
	byName := map[string]hfTensor{}
	for _, t := range ts {
		byName[t.gguf] = t
	}
	for _, t := range ts {
		if t.gguf == e.drop {
			continue
		}
		src := t
		if t.gguf == e.swap[0] {
			src = byName[e.swap[1]]
		}
		v, shape := src.vals, t.shape
		if t.gguf == e.halve {
			shape = []uint64{t.shape[0] / 2, t.shape[1]}
			v = v[:len(v)/2]
		}
		if len(t.shape) == 2 && !e.unpermuted && (strings.HasSuffix(t.gguf, "attn_q.weight") || strings.HasSuffix(t.gguf, "attn_k.weight")) {
			heads := tinyHeads
			if strings.HasSuffix(t.gguf, "attn_k.weight") {
				heads = tinyKV
			}
			v = llamaPermute(v, int(t.shape[0]), int(t.shape[1]), heads)
		}
		if e.normShift != 0 && strings.HasSuffix(t.gguf, "norm.weight") {
			shifted := make([]float32, len(v))
			for i, x := range v {
				shifted[i] = x + e.normShift
			}
			v = shifted
		}
		dims := slices.Clone(shape)
		slices.Reverse(dims)
		typ, data := uint32(gguf.TypeF32), fixture.Encode(v, safetensors.F32)
		if len(t.shape) == 2 {
			typ = uint32(gguf.TypeQ8_0)
			if ty, ok := e.types[t.gguf]; ok {
				typ = ty
			}
			bs := 34
			switch typ {
			case uint32(gguf.TypeQ8_0):
				data = quantizeQ8_0(v)
			case uint32(gguf.TypeQ4_0):
				data, bs = quantizeQ4_0(v), 18
			}
			if t.gguf == e.scale {
				for b := 0; b < len(data); b += bs {
					copy(data[b:], f16Bytes(f16Value(data[b:])*1.25))
				}
			}
		}
		f.Tensors = append(f.Tensors, w.Tensor{Name: t.gguf, Dims: dims, Type: typ, Data: data})
	}
	return f
}

// f16Value reads the half at b[0:2].
func f16Value(b []byte) float32 {
	h := binary.LittleEndian.Uint16(b)
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, man := int(h>>10&0x1F), float64(h&0x3FF)
	if exp == 0 {
		return sign * float32(math.Ldexp(man, -24))
	}
	return sign * float32(math.Ldexp(1+man/1024, exp-15))
}

func tinyFixture(ts []hfTensor) []fixture.Tensor {
	var fx []fixture.Tensor
	for _, h := range ts {
		fx = append(fx, fixture.Tensor{Name: h.name, DType: safetensors.F32, Shape: h.shape, Data: fixture.Encode(h.vals, safetensors.F32)})
	}
	return fx
}

func writeTinyHF(t *testing.T, ts []hfTensor) string {
	t.Helper()
	return export(t, tinyFixture(ts), map[string]any{"model_type": "llama", "architectures": []string{"LlamaForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"num_hidden_layers": 2, "intermediate_size": tinyFF, "vocab_size": tinyVocab, "tie_word_embeddings": true, "torch_dtype": "float32"})
}

// unrelated are the errors of a tensor whose values are another's.
func unrelated(key string) []string {
	return []string{"quantization_error " + key, "reinitialized " + key}
}

func TestDiffGGUF(t *testing.T) {
	ts := tinyLlama()
	pub := writeTinyHF(t, ts)
	q4 := map[string]uint32{"blk.0.ffn_down.weight": uint32(gguf.TypeQ4_0), "blk.1.ffn_down.weight": uint32(gguf.TypeQ4_0)}
	tests := []struct {
		name string
		edit ggufEdit
		want []string // "code key" of every error
	}{
		{"faithful", ggufEdit{types: q4}, nil},
		{"q/k not permuted", ggufEdit{unpermuted: true}, slices.Concat(
			unrelated("model.layers.0.self_attn.k_proj.weight"), unrelated("model.layers.0.self_attn.q_proj.weight"),
			unrelated("model.layers.1.self_attn.k_proj.weight"), unrelated("model.layers.1.self_attn.q_proj.weight"))},
		{"another layer", ggufEdit{swap: [2]string{"blk.1.ffn_up.weight", "blk.0.ffn_up.weight"}}, unrelated("model.layers.1.mlp.up_proj.weight")},
		{"missing", ggufEdit{drop: "blk.1.ffn_gate.weight"}, []string{"missing_key model.layers.1.mlp.gate_proj.weight"}},
		{"wrong shape", ggufEdit{halve: "blk.0.ffn_up.weight"}, []string{"shape_mismatch model.layers.0.mlp.up_proj.weight"}},
		{"wrong scale", ggufEdit{scale: "blk.0.attn_v.weight"}, []string{"quantization_error model.layers.0.self_attn.v_proj.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, tinyGGUFOf(ts, tt.edit).Bytes(), 0o644))
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
			if d.Exported.View.Adapter != "gguf-llama" {
				t.Errorf("exported adapter %s, want gguf-llama", d.Exported.View.Adapter)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range append(slices.Clone(d.Findings), rep.Findings...) {
				if f.Severity == Error {
					got = append(got, string(f.Code)+" "+f.Key)
				}
				if f.Code == CodeQuantizedUnsupported {
					t.Errorf("unexpected %s: %s", f.Code, f.Message)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
				for _, f := range append(slices.Clone(d.Findings), rep.Findings...) {
					t.Logf("%s %s %s: %s", f.Severity, f.Code, f.Key, f.Message)
				}
			}
			if tt.name == "faithful" && (rep.Compared != len(ts) || rep.Mismatched != 0) {
				t.Errorf("compared %d (want %d), mismatched %d", rep.Compared, len(ts), rep.Mismatched)
			}
		})
	}
}

// TestDiffGGUFArchitecture: with no model_type in config.json, auto takes
// the preset's family from general.architecture: a Qwen2 GGUF (no q/k
// permutation) matches through gguf-qwen; gguf-llama, listed first,
// matches its names and shapes as well but permutes q/k.
func TestDiffGGUFArchitecture(t *testing.T) {
	ts := tinyLlama()
	pub := export(t, tinyFixture(ts), map[string]any{"num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV, "tie_word_embeddings": true})
	exp := filepath.Join(t.TempDir(), "model.gguf")
	must(t, os.WriteFile(exp, tinyGGUFOf(ts, ggufEdit{arch: "qwen2", unpermuted: true}).Bytes(), 0o644))
	d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
	if d.Exported.View.Adapter != "gguf-qwen" {
		t.Errorf("exported adapter %s, want gguf-qwen", d.Exported.View.Adapter)
	}
	rep, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(d.Findings, rep.Findings...) {
		if f.Severity == Error {
			t.Errorf("%s %s: %s", f.Code, f.Key, f.Message)
		}
	}
}

// TestBindGGMLMixed: a logical tensor joined from GGUF tensors of two
// block types is bound to no codec, even when the blocks are of one size
// (Q4_0 and IQ4_NL: 32 values in 18 bytes), so that its bytes are never
// decoded as one type; one block type binds its codec.
func TestBindGGMLMixed(t *testing.T) {
	for _, tt := range []struct {
		encs []tensorfile.Encoding
		want string
	}{
		{[]tensorfile.Encoding{tensorfile.Q4_0, tensorfile.Q4_0}, "ggml:Q4_0"},
		{[]tensorfile.Encoding{tensorfile.Q4_0, tensorfile.IQ4_NL}, "ggml:Q4_0+IQ4_NL"},
	} {
		m := &Mapped{View: &adapter.View{Tensors: []adapter.Tensor{{Name: "w", DType: safetensors.U8, Shape: []uint64{4, 18},
			Segments: []adapter.Segment{{Source: 0, Length: 36}, {Source: 1, Length: 36}}, Interleave: []uint64{18, 18}}}},
			Sources: []Source{{Encoding: tt.encs[0]}, {Encoding: tt.encs[1]}}}
		bindGGML(m)
		q := m.View.Tensors[0].Quant
		if q == nil || !strings.HasPrefix(q.Codec.String(), tt.want) || !slices.Equal(q.Shape, []uint64{4, 32}) {
			t.Errorf("%v: bound %+v, want %s [4 32]", tt.encs, q, tt.want)
		}
		_, unsupported := q.Codec.(*quant.Unsupported)
		if unsupported != strings.Contains(tt.want, "+") {
			t.Errorf("%v: codec %T", tt.encs, q.Codec)
		}
	}
}
