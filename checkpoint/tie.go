package checkpoint

import "sync"

// A TieDefault is what tie_word_embeddings is when config.json leaves it
// out: the model class's own default in transformers, and where that is
// written.
type TieDefault struct {
	Tied bool
	// Source is the transformers file, and the commit it was read at, that
	// sets the default.
	Source string
}

// tieDefaults are the tie_word_embeddings defaults of the configuration
// classes, by model_type, as huggingface/transformers declares them
// (`tie_word_embeddings: bool = ...` in the late-v5 dataclass configs, the
// __init__ default in the earlier ones). A model_type not listed gets the
// base class's default, baseTie.
var tieDefaults = sync.OnceValue(func() map[string]TieDefault {
	return map[string]TieDefault{
		"llama":       {false, "src/transformers/models/llama/configuration_llama.py @ 008e5743"},
		"qwen2":       {false, "src/transformers/models/qwen2/configuration_qwen2.py @ 008e5743"},
		"qwen2_moe":   {false, "src/transformers/models/qwen2_moe/configuration_qwen2_moe.py @ 008e5743"},
		"qwen3":       {false, "src/transformers/models/qwen3/configuration_qwen3.py @ 008e5743"},
		"qwen3_moe":   {false, "src/transformers/models/qwen3_moe/configuration_qwen3_moe.py @ 008e5743"},
		"mistral":     {false, "src/transformers/models/mistral/configuration_mistral.py @ 001f85b3"},
		"mixtral":     {false, "src/transformers/models/mixtral/configuration_mixtral.py @ 008e5743"},
		"phi3":        {false, "src/transformers/models/phi3/configuration_phi3.py @ 008e5743"},
		"deepseek_v3": {false, "src/transformers/models/deepseek_v3/configuration_deepseek_v3.py @ 001f85b3"},
		"llama4_text": {false, "src/transformers/models/llama4/configuration_llama4.py (Llama4TextConfig)"},
		"gemma":       {true, "src/transformers/models/gemma/configuration_gemma.py @ 008e5743"},
		"gemma2":      {true, "src/transformers/models/gemma2/configuration_gemma2.py @ 008e5743"},
		"gemma3_text": {true, "src/transformers/models/gemma3/configuration_gemma3.py (Gemma3TextConfig)"},
	}
})

// baseTie is PretrainedConfig's default (transformers v4
// src/transformers/configuration_utils.py:
// `self.tie_word_embeddings = kwargs.pop("tie_word_embeddings", True)`).
// The late-v5 base class declares no such field and reads it with
// getattr(config, "tie_word_embeddings", False); classes that matter set
// their own, above.
var baseTie = TieDefault{true, "src/transformers/configuration_utils.py (PretrainedConfig, v4)"}

// TieDefaultOf returns what tie_word_embeddings is for a config of
// modelType that does not set it.
func TieDefaultOf(modelType string) (TieDefault, bool) {
	d, ok := tieDefaults()[modelType]
	if !ok {
		return baseTie, false
	}
	return d, true
}
