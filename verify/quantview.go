package verify

import (
	"encoding/json"
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A quantSide is what is known of one side's quantization before its view
// is built: why it is taken as quantized, and the scheme that binds it.
type quantSide struct {
	// method says why, for the finding ("quantization_config fp8 e4m3",
	// "F8_E4M3 tensors"); "" for a side that is not quantized.
	method string
	// scheme is the quant_method's scheme; nil tries every scheme and
	// keeps the one that binds the most weights.
	scheme quant.Scheme
	config json.RawMessage
	// borrowed is set on a side with no evidence of its own (an export
	// written without config.json) bound by the other side's scheme: the
	// same companions beside the same weights are evidence enough.
	borrowed bool
	// ggml is set on a GGUF side: its block types are bound by bindGGML,
	// not by a scheme.
	ggml bool
}

// borrow gives a side the other side's scheme when it has none.
func (q *quantSide) borrow(other quantSide) {
	if q.method == "" && other.method != "" {
		*q = other
		q.borrowed = true
	}
}

// quantOf says whether a side is quantized: when its config says so (a
// quantization_config, or mlx-lm's "quantization"), or when it holds
// sub-byte or 8-bit float tensors. Names alone (a model's own "*.scales")
// are no evidence.
func quantOf(m *Mapped, physical []safetensors.TensorInfo) quantSide {
	var q quantSide
	if c := parsedConfig(m.Checkpoint); c != nil {
		switch raw, mlx := c.Fields["quantization"]; {
		case c.Quantized:
			q.config = c.Fields["quantization_config"]
			q.method = quantMethod(q.config)
		case mlx && string(raw) != "null":
			q.config, q.method = raw, "quantization (mlx)"
		}
	}
	if q.method == "" {
		if i := slices.IndexFunc(physical, func(t safetensors.TensorInfo) bool { return lowBit(t.DType) }); i >= 0 {
			q.method = physical[i].DType.String() + " tensors"
		}
	}
	if q.method == "" {
		return q
	}
	var cfg struct {
		Method string `json:"quant_method"`
	}
	if json.Unmarshal(q.config, &cfg) == nil && cfg.Method != "" {
		q.scheme, _ = quant.LookupScheme(cfg.Method)
	}
	return q
}

// bind folds the side's quantized weights and their companions into one
// logical tensor each (adapter.View.BindQuant), and reads the layout
// tensors of those whose shape is in the data (resolveView).
func (q quantSide) bind(m *Mapped) {
	if q.method == "" || q.ggml {
		return
	}
	v := m.View
	defer resolveView(v, m.Sources)
	if q.scheme != nil {
		_, _ = v.BindQuant(q.scheme, q.config) // a config it cannot read binds nothing: every tensor stays
		return
	}
	// No scheme named: the one that binds the most weights, on the names
	// and shapes alone (Bind reads no data).
	infos := make([]tensorfile.TensorInfo, len(v.Tensors))
	for i, t := range v.Tensors {
		infos[i] = tensorfile.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	if best := bestScheme(q.config, infos); best != nil {
		_, _ = v.BindQuant(best, q.config)
	}
}

// sameEncoding reports two quantized weights stored alike: the same codec,
// parts of the same dtypes, and companions of the same shapes. Their bytes
// then compare as they are.
func sameEncoding(p, e adapter.Tensor) bool {
	if p.Quant == nil || e.Quant == nil || p.DType != e.DType || !slices.Equal(p.Shape, e.Shape) ||
		p.Quant.Codec.String() != e.Quant.Codec.String() || !slices.Equal(p.Quant.Codec.Parts(), e.Quant.Codec.Parts()) ||
		len(p.Quant.Companions) != len(e.Quant.Companions) {
		return false
	}
	for i, c := range p.Quant.Companions {
		o := e.Quant.Companions[i]
		if c.DType != o.DType || !slices.Equal(c.Shape, o.Shape) {
			return false
		}
	}
	return true
}
