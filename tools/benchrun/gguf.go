package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// ggufScenarios time diff --values of a BF16 published checkpoint against
// its GGUF conversion (issue 25's target: at most 1.3× the BF16 fine-tune
// scenario's time on amd64 for Q8_0 and Q4_K), with that fine-tune pair
// timed in the same run as the baseline.
func ggufScenarios(e env) []scenario {
	var out []scenario
	for _, q := range []struct {
		id, name string
		typ      uint32
		ftype    uint32 // general.file_type: LLAMA_FTYPE_MOSTLY_Q8_0, _Q4_K_S
		quantize func([]byte, []float32) []byte
	}{
		{"q8_0", "Q8_0", 8, 7, w.AppendQ8_0},
		{"q4_k", "Q4_K", 12, 14, w.AppendQ4K},
	} {
		gguf := func(dir string) string { return filepath.Join(dir, "model-"+q.id+".gguf") }
		file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
		out = append(out, scenario{
			id: "values-gguf-" + q.id,
			title: fmt.Sprintf("BF16 published vs its GGUF conversion, every matrix %s, norms F32 (convert_hf_to_gguf + "+
				"llama-quantize --pure; %s shape, %s BF16; page cache warm), against the BF16 fine-tune pair", q.name, e.denseName, size(e.dense, 2)),
			setup: func(dir string) error {
				moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, finetuneSeed) }
				if err := writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved", safetensors.BF16, moved}}); err != nil {
					return err
				}
				return writeGGUF(gguf(dir), e.dense, q.typ, q.ftype, q.quantize)
			},
			ours: func(dir string) [][]string {
				return [][]string{{e.bin, "diff", "--values", file(dir, "pub"), gguf(dir)}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{e.bin, "diff", "--values", "--rtol", "1e-1", file(dir, "pub"), file(dir, "moved")}}
			},
			floor:  true,
			ratios: "the GGUF diff's time / the BF16 fine-tune diff's (values-finetune-bf16); the target is at most 1.3 on amd64, 2 portable",
		})
	}
	return out
}

// writeGGUF writes q as convert_hf_to_gguf.py names a Qwen3 (qwen3 does
// not permute q/k: conversion/qwen.py) with every matrix in GGML type typ
// by quantize and the norms F32, a tensor at a time.
func writeGGUF(path string, q fixture.Qwen3, typ, ftype uint32, quantize func([]byte, []float32) []byte) error {
	specs := q.Specs()
	infos := make([]w.Info, len(specs))
	for i, s := range specs {
		dims := slices.Clone(s.Shape)
		slices.Reverse(dims)
		n := uint64(1)
		for _, d := range s.Shape {
			n *= d
		}
		info := w.Info{Name: ggufName(s.Name), Dims: dims, Type: 0, Size: 4 * n}
		if len(s.Shape) == 2 {
			info.Type, info.Size = typ, uint64(len(quantize(nil, make([]float32, s.Shape[1]))))*s.Shape[0]
		}
		infos[i] = info
	}
	kv := []w.KV{
		w.P("general.architecture", w.Str("qwen3")), w.P("general.file_type", w.U32(ftype)),
		w.P("qwen3.block_count", w.U32(uint32(q.Layers))), w.P("qwen3.embedding_length", w.U32(uint32(q.Hidden))),
		w.P("qwen3.feed_forward_length", w.U32(uint32(q.Intermediate))),
		w.P("qwen3.attention.head_count", w.U32(uint32(q.Heads))), w.P("qwen3.attention.head_count_kv", w.U32(uint32(q.KVHeads))),
		w.P("qwen3.attention.key_length", w.U32(uint32(q.HeadDim))), w.P("qwen3.attention.value_length", w.U32(uint32(q.HeadDim))),
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 4<<20)
	var vals []float32
	var buf []byte
	err = w.Stream(bw, kv, infos, func(i int) ([]byte, error) {
		t := q.Tensor(specs[i], safetensors.BF16)
		vals = vals[:0]
		for j := 0; j < len(t.Data); j += 2 {
			vals = append(vals, math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[j:]))<<16))
		}
		if infos[i].Type == 0 {
			return fixture.Encode(vals, safetensors.F32), nil
		}
		buf = quantize(buf[:0], vals)
		return buf, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// ggufNames are llama.cpp's names (gguf-py constants.py TENSOR_NAMES) of
// a Qwen3 layer's tensors, by their HF name after "model.layers.N.".
var ggufNames = map[string]string{
	"self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
	"self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
	"self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
	"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
}

func ggufName(hf string) string {
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight"
	case "model.norm.weight":
		return "output_norm.weight"
	case "lm_head.weight":
		return "output.weight"
	}
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if layer, name, ok2 := strings.Cut(rest, "."); ok && ok2 {
		if g, ok := ggufNames[name]; ok {
			return "blk." + layer + "." + g
		}
	}
	return hf
}
