package ggufwrite

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// WriteQwen3 writes q as convert_hf_to_gguf.py and llama-quantize --pure
// write a Qwen3 (qwen3 does not permute q/k: conversion/qwen.py): llama.cpp's
// names, every matrix in GGML type typ by quantize (AppendQ8_0, AppendQ4K),
// the norms F32, the values those of q's BF16 tensors; general.file_type is
// ftype. A tensor at a time, so a full-size model never sits in memory.
func WriteQwen3(path string, q fixture.Qwen3, typ, ftype uint32, quantize func([]byte, []float32) []byte) error {
	specs := q.Specs()
	infos := make([]Info, len(specs))
	for i, s := range specs {
		dims := slices.Clone(s.Shape)
		slices.Reverse(dims)
		n := uint64(1)
		for _, d := range s.Shape {
			n *= d
		}
		info := Info{Name: ggufName(s.Name), Dims: dims, Type: 0, Size: 4 * n}
		if len(s.Shape) == 2 {
			info.Type, info.Size = typ, uint64(len(quantize(nil, make([]float32, s.Shape[1]))))*s.Shape[0]
		}
		infos[i] = info
	}
	kv := []KV{
		P("general.architecture", Str("qwen3")), P("general.file_type", U32(ftype)),
		P("qwen3.block_count", U32(uint32(q.Layers))), P("qwen3.embedding_length", U32(uint32(q.Hidden))),
		P("qwen3.feed_forward_length", U32(uint32(q.Intermediate))),
		P("qwen3.attention.head_count", U32(uint32(q.Heads))), P("qwen3.attention.head_count_kv", U32(uint32(q.KVHeads))),
		P("qwen3.attention.key_length", U32(uint32(q.HeadDim))), P("qwen3.attention.value_length", U32(uint32(q.HeadDim))),
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 4<<20)
	var vals []float32
	var buf []byte
	err = Stream(bw, kv, infos, func(i int) ([]byte, error) {
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
