package verify

import (
	"fmt"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// isAdapterTensor says a tensor name is a PEFT adapter's: PEFT saves every
// one under base_model.model. with lora_A/lora_B (or lora_embedding_A/B,
// lora_magnitude_vector) in its name (huggingface/peft
// src/peft/utils/save_and_load.py @ v0.20.0); mlx-lm's end in .lora_a and
// .lora_b (ml-explore/mlx-lm mlx_lm/tuner/lora.py @ d78bf58e).
func isAdapterTensor(name string) bool {
	return strings.HasPrefix(name, "base_model.model.") || strings.HasSuffix(name, ".lora_a") || strings.HasSuffix(name, ".lora_b") ||
		strings.Contains(name, ".lora_A.") ||
		strings.Contains(name, ".lora_B.") || strings.Contains(name, ".lora_embedding_") ||
		strings.Contains(name, ".lora_magnitude_vector")
}

// isAdapterFile says a tensor file is an adapter written beside a model:
// PEFT's (and torchtune's) adapter_model.safetensors, mlx-lm's
// adapters.safetensors and NNNNNNN_adapters.safetensors.
func isAdapterFile(name string) bool {
	return strings.HasPrefix(name, "adapter_model") || strings.HasSuffix(name, "adapters.safetensors")
}

// modelBesideAdapter recognises a side that holds a full model with a PEFT
// adapter beside it: torchtune's FullModelHFCheckpointer.save_checkpoint
// (pytorch/torchtune torchtune/training/checkpointing/_checkpointer.py
// @ bd2a0fc7) writes a LoRA run's merged model and adapter_model.safetensors,
// adapter_model.pt and adapter_config.json into one epoch_N folder. The
// side is the model when at least half of the other side's tensors are
// among its own (low_key_overlap's threshold); the adapter is then said
// once, as info, and its tensors and file are no missing, unexpected or
// unreferenced anything. It returns the findings left, and whether it
// recognised the side.
func modelBesideAdapter(findings []Finding, m, other *Mapped) ([]Finding, bool) {
	cfg := m.Checkpoint.PEFT
	var files []string
	for _, s := range m.Checkpoint.Shards {
		if isAdapterFile(s.Name) {
			files = append(files, s.Name)
		}
	}
	for _, n := range m.Checkpoint.Unreferenced {
		if isAdapterFile(n) {
			files = append(files, n)
		}
	}
	if cfg == nil && len(files) == 0 {
		return findings, false
	}
	shared := 0
	for _, t := range m.View.Tensors {
		if _, ok := other.View.Tensor(t.Name); ok && !isAdapterTensor(t.Name) {
			shared++
		}
	}
	if shared == 0 || 2*shared < len(other.View.Tensors) {
		return findings, false
	}
	_, lora := loraPairs(m.Sources)
	kept := findings[:0]
	for _, f := range findings {
		switch {
		case f.Side == m.Side && f.Code == CodeUnreferencedShard && isAdapterFile(baseName(f.File)):
		case (f.Code == CodeUnexpectedKey || f.Code == CodeMissingKey) && isAdapterTensor(f.Key):
		default:
			kept = append(kept, f)
		}
	}
	what := "a LoRA adapter"
	if cfg != nil && cfg.PEFTType != "" && !strings.EqualFold(cfg.PEFTType, "LORA") {
		what = "a " + cfg.PEFTType + " adapter"
	}
	if cfg != nil && cfg.BaseModel != "" {
		what += " for " + textfmt.Quote(cfg.BaseModel)
	}
	if cfg != nil {
		files = append(files, cfg.Name)
	}
	msg := fmt.Sprintf("beside the model, %s (%s): the model was compared, the adapter was not (a LoRA run's checkpoint folder, as torchtune's epoch_N, holds both)",
		what, strings.Join(files, ", "))
	if lora > 0 {
		msg += fmt.Sprintf("; the adapter holds %s", textfmt.Plural(lora, "low-rank pair"))
	}
	f := Finding{Code: CodeAdapterBeside, Severity: Info, Side: m.Side, Message: msg}
	if cfg != nil {
		f.File = cfg.Path
	}
	return append(kept, f), true
}

// baseName is the last element of a slash- or backslash-separated path.
func baseName(p string) string {
	return p[strings.LastIndexAny(p, `/\`)+1:]
}
