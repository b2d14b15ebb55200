package verify

import (
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// The adapter layouts --lora, validate --base and inspect read. Each names
// a target's low-rank pair its own way; all are read into peft's
// orientation, A [r, in] and B [out, r], with the module's Hugging Face
// name.
//
//   - peft (huggingface/peft src/peft/utils/save_and_load.py @
//     003369494699fedd543fe38d16e52df96aeae743):
//     base_model.model.<module>.lora_A.weight [r, in], .lora_B.weight
//     [out, r], .lora_magnitude_vector for DoRA. torchtune's
//     FullModelHFCheckpointer saves this layout too (adapter_model.safetensors,
//     through convert_weights.tune_to_peft_adapter_weights) with a peft
//     adapter_config.json (tune_to_peft_adapter_config: r, lora_alpha,
//     target_modules).
//   - torchtune's own (pytorch/torchtune torchtune/models/convert_weights.py
//     @ 00c242bad053b9b63c27826a277a4522072f9d8f, _FROM_HF and
//     _TO_PEFT_KEYS; saved as adapter_model.pt beside the peft copy by
//     torchtune/training/checkpointing/_checkpointer.py @
//     0104e39e477239595b2366673135d518e5f7be8f): layers.N.attn.q_proj.lora_a.weight
//     [r, in] and .lora_b.weight [out, r], attn.output_proj for o_proj,
//     mlp.w1/w3/w2 for gate/up/down_proj, output for lm_head, .magnitude for
//     DoRA. Its merge is get_merged_lora_ckpt's W + (alpha/r)·B·A. For
//     Llama-family models torchtune holds q_proj and k_proj in Meta's rotary
//     layout, so tune_to_peft_adapter_weights permutes their lora_B rows
//     (_permute_lora_matrix); so does loadValues, against a base whose
//     config says llama or mistral.
//   - mlx-lm's (ml-explore/mlx-lm mlx_lm/tuner/lora.py @
//     200af25dd5b26d1711317970fe44b5acf365faab, LoRALinear; written by
//     mlx_lm/tuner/utils.py @ c042c222833e9030d68bd18adcbe675e73b82b6c
//     linear_to_lora_layers with config["rank"], ["scale"], ["dropout"]):
//     adapters.safetensors with <module>.lora_a [in, r] and .lora_b
//     [r, out], the transposes of peft's; fuse adds
//     (scale·lora_bᵀ)·lora_aᵀ, cast to the weight's dtype, with
//     adapter_config.json's lora_parameters.scale as is (no alpha/r;
//     LoRALinear's default 20 when the config says none).
type loraLayout int

const (
	layoutPEFT loraLayout = iota
	layoutMLX
	layoutTorchtune
)

func (l loraLayout) String() string {
	return [...]string{"peft", "mlx-lm", "torchtune"}[l]
}

// mlxAdapterFile is the file mlx-lm's training writes last.
const mlxAdapterFile = "adapters.safetensors"

// mlxDefaultScale is LoRALinear's scale when the config gives none.
const mlxDefaultScale = 20

// A loraPart is one tensor of a low-rank pair: the module's HF path, and
// 'A', 'B' or 'M' (DoRA's magnitude), or 'a' and 'b' for peft's
// Embedding pair (see embeddingPair).
type loraPart struct {
	name, path string
	part       byte
	layout     loraLayout
}

// A loraSuffix ends the name of one part of a pair.
type loraSuffix struct {
	suffix string
	part   byte
}

var (
	peftSuffixes      = []loraSuffix{{".lora_A.weight", 'A'}, {".lora_B.weight", 'B'}, {".lora_magnitude_vector", 'M'}, {".lora_embedding_A", 'a'}, {".lora_embedding_B", 'b'}}
	torchtuneSuffixes = []loraSuffix{{".lora_a.weight", 'A'}, {".lora_b.weight", 'B'}, {".magnitude", 'M'}}
	mlxSuffixes       = []loraSuffix{{".lora_a", 'A'}, {".lora_b", 'B'}}
)

// cut finds the suffix name ends in: the module path before it and the part.
func cut(name string, suffixes []loraSuffix) (string, byte, bool) {
	for _, s := range suffixes {
		if path, ok := strings.CutSuffix(name, s.suffix); ok {
			return path, s.part, true
		}
	}
	return "", 0, false
}

// parseLoRAName reads an adapter tensor's name in any of the layouts.
func parseLoRAName(name string) (loraPart, bool) {
	p := loraPart{name: name}
	if rest, ok := strings.CutPrefix(name, peftPrefix); ok {
		p.path, p.part, ok = cut(rest, peftSuffixes)
		return p, ok
	}
	if path, part, ok := cut(name, torchtuneSuffixes); ok {
		p.path, ok = torchtuneToHF(path)
		p.part, p.layout = part, layoutTorchtune
		return p, ok
	}
	path, part, ok := cut(name, mlxSuffixes)
	p.path, p.part, p.layout = path, part, layoutMLX
	return p, ok
}

// torchtuneModules maps torchtune's module names in a decoder layer to
// Hugging Face's (convert_weights.py's _FROM_HF).
var torchtuneModules = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"attn.q_proj": "self_attn.q_proj", "attn.k_proj": "self_attn.k_proj", "attn.v_proj": "self_attn.v_proj",
		"attn.output_proj": "self_attn.o_proj",
		"mlp.w1":           "mlp.gate_proj", "mlp.w3": "mlp.up_proj", "mlp.w2": "mlp.down_proj",
	}
})

// torchtuneToHF maps a torchtune module path (layers.N.attn.q_proj,
// output) to its Hugging Face name.
func torchtuneToHF(path string) (string, bool) {
	if path == "output" {
		return "lm_head", true
	}
	rest, ok := strings.CutPrefix(path, "layers.")
	if !ok {
		return "", false
	}
	n, module, ok := strings.Cut(rest, ".")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return "", false
	}
	hf, ok := torchtuneModules()[module]
	if !ok {
		return "", false
	}
	return "model.layers." + n + "." + hf, true
}

// peftShape is a stored pair tensor's shape in peft's orientation: mlx-lm
// stores both halves transposed.
func (l loraLayout) peftShape(shape []uint64) []uint64 {
	if l == layoutMLX {
		return transposedShape(shape)
	}
	return shape
}

// transposedShape is a 2-D shape transposed; other shapes as they are.
func transposedShape(shape []uint64) []uint64 {
	if len(shape) == 2 {
		return []uint64{shape[1], shape[0]}
	}
	return shape
}

// peft's LoRA of an nn.Embedding (src/peft/tuners/lora/layer.py @
// 003369494699fedd543fe38d16e52df96aeae743, Embedding.update_layer and
// get_delta_weight) saves base_model.model.<module>.lora_embedding_A
// [r, num_embeddings] and .lora_embedding_B [embedding_dim, r], and
// merges W + transpose(B @ A)·scaling into the weight [num_embeddings,
// embedding_dim]. That is a Linear pair of peft's orientation with
// lora_B' = lora_embedding_Aᵀ [num_embeddings, r] and lora_A' =
// lora_embedding_Bᵀ [r, embedding_dim]: readLoRA and loadValues read the
// pair so, and everything after checks it as any target.

// embeddingPair turns an Embedding module's values as stored (a from
// lora_embedding_B, b from lora_embedding_A) into the Linear pair's.
func embeddingPair(m *loraModule) {
	m.aVals = transpose(m.aVals, m.aShape[1], m.aShape[0])
	m.bVals = transpose(m.bVals, m.bShape[1], m.bShape[0])
}

// toPEFT turns a module's values as stored into peft's orientation: for
// mlx-lm the transposes of lora_a [in, r] and lora_b [r, out]; for
// torchtune against a Llama-family base, q_proj's and k_proj's lora_B rows
// from Meta's rotary layout to Hugging Face's.
func (l loraLayout) toPEFT(m *loraModule, base *checkpoint.Checkpoint) {
	switch l {
	case layoutMLX:
		m.aVals = transpose(m.aVals, m.aShape[1], m.aShape[0])
		m.bVals = transpose(m.bVals, m.bShape[1], m.bShape[0])
	case layoutTorchtune:
		cfg := base.Config
		if cfg == nil || (cfg.ModelType != "llama" && cfg.ModelType != "mistral") || cfg.HeadDim == 0 || cfg.HeadDim%2 != 0 {
			return
		}
		heads := uint64(0)
		switch {
		case strings.HasSuffix(m.path, ".self_attn.q_proj"):
			heads = cfg.NumAttentionHeads
		case strings.HasSuffix(m.path, ".self_attn.k_proj"):
			heads = cfg.NumKeyValueHeads
		}
		if heads == 0 || m.bShape[0] != heads*cfg.HeadDim {
			return
		}
		m.bVals = permuteRotaryRows(m.bVals, heads, cfg.HeadDim, m.bShape[1])
	}
}

// transpose returns the [cols, rows] transpose of a row-major [rows, cols]
// matrix.
func transpose(v []float32, rows, cols uint64) []float32 {
	out := make([]float32, len(v))
	for i := range rows {
		for j := range cols {
			out[j*rows+i] = v[i*cols+j]
		}
	}
	return out
}

// permuteRotaryRows is _permute_lora_matrix: t.view(heads, hd/2, 2, r)
// .transpose(1, 2).reshape(heads·hd, r), so row h·hd + 2c + k moves to
// h·hd + k·hd/2 + c.
func permuteRotaryRows(v []float32, heads, hd, r uint64) []float32 {
	out := make([]float32, len(v))
	for h := range heads {
		for c := range hd / 2 {
			for k := range uint64(2) {
				from, to := h*hd+2*c+k, h*hd+k*hd/2+c
				copy(out[to*r:(to+1)*r], v[from*r:(from+1)*r])
			}
		}
	}
	return out
}
