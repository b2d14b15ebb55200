package verify

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// ggufFinding is the finding of a GGUF shard's format error: its gguf_*
// code, the tensor it is about, the metadata key in the message.
func ggufFinding(s *checkpoint.Shard) (Finding, bool) {
	var fe *gguf.FormatError
	if !errors.As(s.Err, &fe) {
		return Finding{}, false
	}
	msg := fe.Msg
	if fe.Key != "" {
		msg = fmt.Sprintf("key %q: %s", fe.Key, msg)
	}
	if fe.Offset >= 0 {
		msg += fmt.Sprintf(" (at byte %d)", fe.Offset)
	}
	return Finding{Code: GGUFFormatCode(fe.Kind), Severity: Error, File: s.Path, Key: fe.Tensor, Message: msg}, true
}

// ggufWeights reports a checkpoint of GGUF files. Their config is their
// metadata, checked against their tensors by ggufMetadata; a config.json
// beside them (convert_hf_to_gguf.py writes into the Hugging Face folder)
// is the Hugging Face weights', judged with them and against the GGUF
// metadata by diff's gguf_config_mismatch. Judged against the GGUF's
// tensors, it repeated the published side's findings on the same file and
// made up a dtype mismatch.
func ggufWeights(c *checkpoint.Checkpoint) bool {
	return len(c.Shards) > 0 && !slices.ContainsFunc(c.Shards, func(s *checkpoint.Shard) bool {
		f, ok := tensorfile.ByFileName(s.Name)
		return !ok || f.Name() != gguf.Name
	})
}

// isGGUF reports a readable GGUF shard.
func isGGUF(s *checkpoint.Shard) bool {
	_, ok := s.Header.(*gguf.File)
	return ok && s.File != nil
}

// inspectFile adds the tensors of a shard of a format other than
// safetensors (a GGUF file), through the format-neutral tensorfile.File:
// a block-encoded tensor is counted under its encoding ("Q4_K").
func (ins *Inspection) inspectFile(s *checkpoint.Shard, match func(string) bool) {
	ins.Totals.Files++
	for k, v := range s.File.Meta() {
		if ins.Totals.Metadata == nil {
			ins.Totals.Metadata = map[string]string{}
		}
		ins.Totals.Metadata[k] = v
	}
	for _, t := range tensorfile.Tensors(s.File) {
		if !match(t.Name) {
			continue
		}
		n, _ := t.NumElements()
		row := TensorRow{Name: t.Name, DType: t.DType, Shape: t.Shape, Parameters: n, Bytes: uint64(t.Size), File: s.Name}
		if t.Encoding != 0 {
			row.Encoding = t.Encoding.String()
		}
		ins.Tensors = append(ins.Tensors, row)
		ins.add(row.Type(), n, row.Bytes)
	}
}

// headChecked lists the architectures whose attn_q/attn_k/attn_v rows are
// head_count·key_length, head_count_kv·key_length, head_count_kv·value_length
// (others fuse QKV or gate their queries).
var headChecked = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true, "qwen3moe": true, "gemma2": true, "gemma3": true}

// ggufMetadata checks a GGUF file's metadata against its tensors: the block
// count against the blk.N layers present, the embedding length against
// token_embd, and the head counts against the attention shapes, which
// llama.cpp trusts when it builds the graph.
func ggufMetadata(s *checkpoint.Shard) []Finding {
	f, ok := s.Header.(*gguf.File)
	if !ok || f.Architecture() == "" || splitCount(f) > 1 {
		return nil // split files are checked together (ggufSplits)
	}
	return ggufMetadataOf(f, []*gguf.File{f}, s.Path)
}

// ggufMetadataOf checks the metadata of f against the tensors of files
// (f's split files, or f), its findings on path.
func ggufMetadataOf(f *gguf.File, files []*gguf.File, path string) []Finding {
	arch := f.Architecture()
	u := func(key string) (uint64, bool) {
		v, ok := f.Lookup(arch + "." + key)
		if !ok {
			return 0, false
		}
		return v.Uint()
	}
	var out []Finding
	bad := func(key, msg string, args ...any) {
		out = append(out, Finding{Code: CodeGGUFMetadataMismatch, Severity: Error, File: path, Key: key, Message: fmt.Sprintf(msg, args...)})
	}
	layers := map[uint64]bool{}
	shapes := map[string][]uint64{}
	for _, g := range files {
		for i := range g.Tensors {
			t := &g.Tensors[i]
			shapes[t.Name] = t.Shape()
			if rest, ok := strings.CutPrefix(t.Name, "blk."); ok {
				if n, err := strconv.ParseUint(rest[:max(strings.IndexByte(rest, '.'), 0)], 10, 32); err == nil {
					layers[n] = true
				}
			}
		}
	}
	if blocks, ok := u("block_count"); ok && len(layers) > 0 {
		top := slices.Max(slices.Collect(maps.Keys(layers)))
		if uint64(len(layers)) != blocks || top+1 != blocks {
			bad("", "%s.block_count is %d, but the tensors hold %d layers (blk.0 … blk.%d)", arch, blocks, len(layers), top)
		}
	}
	embd, hasEmbd := u("embedding_length")
	if e := shapes["token_embd.weight"]; hasEmbd && len(e) == 2 && e[1] != embd {
		bad("token_embd.weight", "%s.embedding_length is %d, but token_embd.weight is %s", arch, embd, tensorfile.FormatShape(e))
	}
	order := slices.Sorted(maps.Keys(layers))
	out = append(out, ggufExperts(arch, u, shapes, order, path)...)
	heads, ok := u("attention.head_count")
	if !ok || heads == 0 || !headChecked[arch] {
		return out
	}
	kvHeads, ok := u("attention.head_count_kv")
	if !ok {
		kvHeads = heads
	}
	keyLen, ok := u("attention.key_length")
	if !ok && hasEmbd {
		keyLen = embd / heads
	}
	valLen, ok := u("attention.value_length")
	if !ok {
		valLen = keyLen
	}
	for _, c := range []struct {
		name         string
		rows         uint64
		what         string
		heads, width uint64
	}{
		{"attn_q", heads * keyLen, "head_count × key_length", heads, keyLen},
		{"attn_k", kvHeads * keyLen, "head_count_kv × key_length", kvHeads, keyLen},
		{"attn_v", kvHeads * valLen, "head_count_kv × value_length", kvHeads, valLen},
	} {
		for _, l := range order {
			name := "blk." + strconv.FormatUint(l, 10) + "." + c.name + ".weight"
			if sh := shapes[name]; len(sh) == 2 && sh[0] != c.rows {
				bad(name, "%s is %s, but the metadata's %s is %d × %d = %d rows", name, tensorfile.FormatShape(sh), c.what, c.heads, c.width, c.rows)
				break // one finding a projection, not one a layer
			}
		}
	}
	return out
}

// ggufStackedExperts are the tensors of an MoE layer whose first row-major
// dimension is the expert, as llama.cpp's loaders create them: the stacked
// experts [E, ff, H] (gate and up; down [E, H, ff]), gpt-oss's biases of
// them [E, ff] and of the router [E], the router [E, H], deepseek2's
// expert score bias [E]. Shared experts (ffn_*_shexp) are single matrices.
var ggufStackedExperts = []string{"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight",
	"ffn_gate_up_exps.weight", "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias", "ffn_gate_inp.bias", "exp_probs_b.bias"}

// ggufExperts checks an MoE file's expert_count against the experts its
// layers stack (llama.cpp's loader refuses any other shape), and
// expert_used_count against expert_count. Legacy files with one tensor an
// expert (blk.N.ffn_gate.E.weight) stack none and are not checked.
func ggufExperts(arch string, u func(string) (uint64, bool), shapes map[string][]uint64, layers []uint64, path string) []Finding {
	experts, ok := u("expert_count")
	if !ok {
		return nil
	}
	var out []Finding
	if used, ok := u("expert_used_count"); ok && used > experts {
		out = append(out, Finding{Code: CodeGGUFMetadataMismatch, Severity: Error, File: path,
			Message: fmt.Sprintf("%s.expert_used_count is %d, more than its %d experts (%s.expert_count)", arch, used, experts, arch)})
	}
	for _, part := range ggufStackedExperts {
		for _, l := range layers {
			name := "blk." + strconv.FormatUint(l, 10) + "." + part
			if sh := shapes[name]; len(sh) > 0 && sh[0] != experts {
				out = append(out, Finding{Code: CodeGGUFMetadataMismatch, Severity: Error, File: path, Key: name,
					Message: fmt.Sprintf("%s is %s, but the metadata's %s.expert_count is %d", name, tensorfile.FormatShape(sh), arch, experts)})
				break // one finding a tensor kind, not one a layer
			}
		}
	}
	return out
}
