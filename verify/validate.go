package verify

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Validate checks a checkpoint: every shard against the format (the
// reference implementation's errors plus duplicate_key and unaligned_data),
// the index against the shards, and config.json against the tensors.
func Validate(c *safetensors.Checkpoint) []Finding {
	var out []Finding
	for _, s := range c.Shards {
		out = append(out, validateShard(s)...)
	}
	out = append(out, validateIndex(c)...)
	out = append(out, validateConfig(c)...)
	return out
}

func validateShard(s *safetensors.Shard) []Finding {
	var out []Finding
	file := s.Path
	if file == "" {
		file = s.Name
	}
	if s.Err != nil {
		var fe *safetensors.FormatError
		if errors.As(s.Err, &fe) {
			out = append(out, Finding{Code: fe.Kind.String(), Severity: Error, File: file, Key: fe.Tensor, Message: formatMessage(fe)})
		} else {
			out = append(out, Finding{Code: CodeShardUnreadable, Severity: Error, File: file, Message: s.Err.Error()})
		}
	}
	f := s.File
	if f == nil {
		return out
	}
	for _, name := range f.Duplicates {
		out = append(out, Finding{Code: CodeDuplicateKey, Severity: Warning, File: file, Key: name,
			Message: "tensor name appears more than once in the header; the last entry is used"})
	}
	if f.HeaderSize%8 != 0 {
		out = append(out, Finding{Code: CodeUnalignedData, Severity: Warning, File: file,
			Message: fmt.Sprintf("header length %d is not a multiple of 8, so tensor data is not 8-byte aligned", f.HeaderSize)})
	}
	for _, t := range f.Tensors {
		elem := uint64(t.DType.Bits() / 8)
		if elem > 1 && t.Size() > 0 && t.DataOffsets[0]%elem != 0 {
			out = append(out, Finding{Code: CodeUnalignedData, Severity: Warning, File: file, Key: t.Name,
				Message: fmt.Sprintf("%s data starts at offset %d, not a multiple of its %d-byte element size", t.DType, t.DataOffsets[0], elem)})
		}
	}
	return out
}

// formatMessage is the FormatError without the kind, which is the code.
func formatMessage(fe *safetensors.FormatError) string {
	msg := fe.Msg
	if fe.Offset >= 0 {
		msg += fmt.Sprintf(" (at byte %d)", fe.Offset)
	}
	return msg
}

func validateIndex(c *safetensors.Checkpoint) []Finding {
	idx := c.Index
	if idx == nil {
		return nil
	}
	if idx.Err != nil {
		var fe *safetensors.FormatError
		errors.As(idx.Err, &fe)
		return []Finding{{Code: safetensors.IndexInvalid.String(), Severity: Error, File: idx.Path, Message: fe.Msg + "; checked the *.safetensors files in its folder instead"}}
	}
	var out []Finding
	byName := make(map[string]*safetensors.Shard, len(c.Shards))
	for _, s := range c.Shards {
		byName[s.Name] = s
	}
	// Which shards hold each tensor.
	holders := make(map[string][]string)
	var total uint64
	for _, s := range c.Shards {
		if s.File == nil {
			continue
		}
		for _, t := range s.File.Tensors {
			holders[t.Name] = append(holders[t.Name], s.Name)
			total += t.Size()
			want, ok := idx.WeightMap[t.Name]
			if !ok {
				out = append(out, Finding{Code: CodeShardKeyNotInIndex, Severity: Error, File: s.Path, Key: t.Name,
					Message: "tensor is in this shard but not in the index's weight_map"})
			} else if want != s.Name {
				out = append(out, Finding{Code: CodeShardKeyNotInIndex, Severity: Error, File: s.Path, Key: t.Name,
					Message: fmt.Sprintf("tensor is in this shard but the index maps it to %s", want)})
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(idx.WeightMap)) {
		s := byName[idx.WeightMap[key]]
		if s == nil || s.File == nil {
			continue // the shard's own finding says why
		}
		if _, ok := s.File.Tensor(key); !ok {
			out = append(out, Finding{Code: CodeIndexKeyNotInShard, Severity: Error, File: s.Path, Key: key,
				Message: fmt.Sprintf("index maps the tensor to %s, whose header does not have it", s.Name)})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(holders)) {
		if h := holders[key]; len(h) > 1 {
			out = append(out, Finding{Code: CodeDuplicateKeyAcrossShards, Severity: Error, Key: key,
				Message: "tensor is stored in " + strings.Join(h, ", ")})
		}
	}
	allOpened := !slices.ContainsFunc(c.Shards, func(s *safetensors.Shard) bool { return s.File == nil })
	if idx.TotalSize != nil && allOpened && *idx.TotalSize != total {
		out = append(out, Finding{Code: CodeIndexTotalSizeMismatch, Severity: Warning, File: idx.Path,
			Message:  fmt.Sprintf("metadata.total_size is %d but the shards' tensors hold %d bytes", *idx.TotalSize, total),
			Expected: total, Got: *idx.TotalSize})
	}
	for _, name := range c.Unreferenced {
		out = append(out, Finding{Code: CodeUnreferencedShard, Severity: Warning, File: name,
			Message: "a .safetensors file beside the index that the index does not name; it was not checked"})
	}
	return out
}

var layerIndex = regexp.MustCompile(`(?:^|\.)(?:layers|h|blocks|layer)\.(\d+)\.`)

// embeddingNames are the input embeddings of common layouts.
var embeddingNames = []string{"model.embed_tokens.weight", "embed_tokens.weight", "transformer.wte.weight",
	"model.language_model.embed_tokens.weight", "tok_embeddings.weight", "embedding.word_embeddings.weight"}

// configDTypes maps config.json dtype names to stored dtypes.
var configDTypes = map[string]safetensors.DType{
	"float32": safetensors.F32, "float16": safetensors.F16, "bfloat16": safetensors.BF16, "float64": safetensors.F64,
	"float": safetensors.F32, "half": safetensors.F16, "double": safetensors.F64,
}

func validateConfig(c *safetensors.Checkpoint) []Finding {
	cfg := c.Config
	if cfg == nil {
		return nil
	}
	if cfg.Err != nil {
		return []Finding{{Code: CodeConfigInvalid, Severity: Warning, File: cfg.Path, Message: cfg.Err.Error()}}
	}
	var out []Finding
	mismatch := func(key, msg string, expected, got any) {
		out = append(out, Finding{Code: CodeConfigMismatch, Severity: Warning, File: cfg.Path, Key: key, Message: msg, Expected: expected, Got: got})
	}
	tensors := make(map[string]safetensors.TensorInfo)
	layers := make(map[uint64]bool)
	paramsByDType := make(map[safetensors.DType]uint64)
	for _, s := range c.Shards {
		if s.File == nil {
			continue
		}
		for _, t := range s.File.Tensors {
			tensors[t.Name] = t
			if m := layerIndex.FindStringSubmatch(t.Name); m != nil {
				if i, err := strconv.ParseUint(m[1], 10, 32); err == nil {
					layers[i] = true
				}
			}
			if n, ok := t.NumElements(); ok && t.DType.IsFloat() {
				paramsByDType[t.DType] += n
			}
		}
	}
	if len(tensors) == 0 {
		return nil
	}
	if cfg.VocabSize > 0 && cfg.HiddenSize > 0 {
		for _, name := range embeddingNames {
			t, ok := tensors[name]
			if !ok {
				continue
			}
			want := []uint64{cfg.VocabSize, cfg.HiddenSize}
			// Vocabularies are often padded past vocab_size; a smaller
			// embedding, or another width, is what breaks loading.
			if len(t.Shape) != 2 || t.Shape[0] < cfg.VocabSize || t.Shape[1] != cfg.HiddenSize {
				mismatch(name, fmt.Sprintf("embedding shape %v does not fit vocab_size %d x hidden_size %d", t.Shape, cfg.VocabSize, cfg.HiddenSize), want, t.Shape)
			}
			break
		}
	}
	if cfg.NumHiddenLayers > 0 && len(layers) > 0 {
		var missing []uint64
		for i := range cfg.NumHiddenLayers {
			if !layers[i] {
				missing = append(missing, i)
			}
		}
		maxLayer := slices.Max(slices.Collect(maps.Keys(layers)))
		switch {
		case maxLayer >= cfg.NumHiddenLayers:
			mismatch("", fmt.Sprintf("num_hidden_layers is %d but layer %d is present", cfg.NumHiddenLayers, maxLayer), cfg.NumHiddenLayers, maxLayer+1)
		case len(missing) > 0:
			mismatch("", fmt.Sprintf("num_hidden_layers is %d but %d layers have no tensors (first: %d)", cfg.NumHiddenLayers, len(missing), missing[0]), cfg.NumHiddenLayers, len(layers))
		}
	}
	if want, ok := configDTypes[cfg.DType]; ok && !cfg.Quantized && len(paramsByDType) > 0 {
		var dominant safetensors.DType
		var most uint64
		for _, d := range safetensors.DTypes() {
			if paramsByDType[d] > most {
				dominant, most = d, paramsByDType[d]
			}
		}
		if most > 0 && dominant != want {
			mismatch("", fmt.Sprintf("config dtype is %s but most parameters are stored as %s", cfg.DType, dominant), want, dominant)
		}
	}
	return out
}
