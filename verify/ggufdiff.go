package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A GGUF export in a diff: its F32, F16 and BF16 tensors are plain; a
// tensor of a GGML block type (Q8_0, Q4_K, …) enters the view as rows of
// bytes, [rows…, bytes a row], so that the adapters' renames and row
// permutations move whole rows of blocks, and is then bound as a quantized
// weight of one part, its data, decoded by quant.GGML against the HF
// source's logical shape.

// ggufBlockRows gives the block-typed tensors of a GGUF shard's sources
// their byte shapes and encodings.
func ggufBlockRows(s *checkpoint.Shard, srcs []Source) {
	if !isGGUF(s) {
		return
	}
	for i, ti := range tensorfile.Tensors(s.Header) {
		if i >= len(srcs) || ti.Encoding == 0 || len(ti.Shape) == 0 {
			continue
		}
		b := ti.Encoding.Block()
		cols := ti.Shape[len(ti.Shape)-1]
		if b.Elements == 0 || cols%b.Elements != 0 {
			continue // the reader rejects it: gguf_bad_size
		}
		t := *srcs[i].Tensor
		t.Shape = append(slices.Clone(ti.Shape[:len(ti.Shape)-1]), cols/b.Elements*b.Bytes)
		srcs[i].Tensor, srcs[i].Encoding = &t, ti.Encoding
	}
}

// hasGGML reports sources with a GGML block type.
func hasGGML(srcs []Source) bool {
	return slices.ContainsFunc(srcs, func(s Source) bool { return s.Encoding != 0 })
}

// bindGGML binds each tensor of the view made of a block-typed GGUF tensor
// as a quantized weight: its codec, its logical shape, its data its only
// part. A tensor whose encoding has no codec keeps quant.Unsupported, so
// that it is named, not compared as bytes.
func bindGGML(m *Mapped) {
	for i := range m.View.Tensors {
		t := &m.View.Tensors[i]
		if t.Quant != nil || len(t.Segments) == 0 || len(t.Shape) == 0 {
			continue
		}
		enc := m.Sources[t.Segments[0].Source].Encoding
		if enc == 0 {
			continue
		}
		b := enc.Block()
		// The stored rows are blocks of bytes: the logical tensor's last
		// dimension, or, read transposed (gpt-oss's ffn_down_exps), its
		// second to last.
		bytesDim := len(t.Shape) - 1
		if t.Transposed && bytesDim > 0 {
			bytesDim--
		}
		shape := slices.Clone(t.Shape)
		shape[bytesDim] = t.Shape[bytesDim] / b.Bytes * b.Elements
		c, ok := quant.GGML(enc)
		scheme := "ggml:" + enc.String()
		// A join of tensors of two block types of one block size (Q4_0 and
		// IQ4_NL) is no one encoding.
		for _, seg := range t.Segments {
			if other := m.Sources[seg.Source].Encoding; other != enc {
				ok, scheme = false, "ggml:"+enc.String()+"+"+other.String()
				break
			}
		}
		if !ok {
			c = &quant.Unsupported{Scheme: scheme, Layout: []quant.Part{{Role: quant.Data, DType: tensorfile.U8}}}
		}
		t.Quant = &adapter.Quantized{Codec: c, Shape: shape, Parts: []string{t.Name}}
	}
}

// isGGML reports a tensor bound by bindGGML.
func isGGML(t adapter.Tensor) bool {
	return t.Quant != nil && strings.HasPrefix(t.Quant.Codec.String(), "ggml:")
}

// ggmlShapesDiffer reports a GGUF block-typed tensor whose logical shape
// is not its counterpart's: a shape_mismatch, its values not compared.
func ggmlShapesDiffer(p, e adapter.Tensor) bool {
	ps, es := logicalShape(p), logicalShape(e)
	return (isGGML(p) || isGGML(e)) && ps != nil && es != nil && !slices.Equal(ps, es)
}

// ggmlShapeMismatch compares a GGUF block-typed tensor's logical shape with
// its counterpart's: the block types have no other shape check.
func ggmlShapeMismatch(p, e adapter.Tensor) (Finding, bool) {
	if !ggmlShapesDiffer(p, e) {
		return Finding{}, false
	}
	ps, es := logicalShape(p), logicalShape(e)
	return Finding{Code: CodeShapeMismatch, Severity: Error, Key: p.Name, Published: ps, Exported: es,
		Message: fmt.Sprintf("published %s, exported %s", safetensors.FormatShape(ps), safetensors.FormatShape(es))}, true
}

// isGGUFCheckpoint reports a checkpoint of GGUF files.
func isGGUFCheckpoint(c *checkpoint.Checkpoint) bool {
	return slices.ContainsFunc(c.Shards, func(s *checkpoint.Shard) bool {
		_, ok := s.Header.(*gguf.File)
		return ok
	})
}

// ggufArchitecture is general.architecture of a checkpoint's first GGUF
// shard, "" when it has none: a GGUF export carries no config.json, and
// auto picks its preset's family by it.
func ggufArchitecture(c *checkpoint.Checkpoint) string {
	for _, s := range c.Shards {
		if f, ok := s.Header.(*gguf.File); ok {
			return f.Architecture()
		}
	}
	return ""
}
