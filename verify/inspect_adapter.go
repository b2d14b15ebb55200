package verify

import (
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// An AdapterInspection is what inspect shows of a LoRA adapter: its
// config (adapter_config.json) and, read from its tensor names and shapes,
// each target's rank and scale. BaseModel is base_model_name_or_path as
// the config gives it: reported, never fetched.
type AdapterInspection struct {
	// Layout is how the adapter names its pairs: "peft", "torchtune" or
	// "mlx-lm" (see loraLayout).
	Layout        string   `json:"layout"`
	Config        string   `json:"config,omitempty"`
	PEFTType      string   `json:"peft_type,omitempty"`
	Trainer       string   `json:"trainer,omitempty"`
	BaseModel     string   `json:"base_model,omitempty"`
	Rank          uint64   `json:"r,omitempty"`
	Alpha         Float    `json:"alpha"`
	RSLoRA        bool     `json:"rslora"`
	DoRA          bool     `json:"dora"`
	TargetModules []string `json:"target_modules,omitempty"`
	TargetRegex   string   `json:"target_regex,omitempty"`
	ModulesToSave []string `json:"modules_to_save,omitempty"`
	// Targets are the modules with LoRA weights, by path; Saved the
	// modules_to_save copies the adapter holds (base weight names).
	Targets []AdapterTarget `json:"targets"`
	Saved   []string        `json:"saved"`
	// TrainableParameters counts every tensor of the adapter: the low-rank
	// pairs, DoRA magnitudes and saved copies (what peft's
	// print_trainable_parameters counts).
	TrainableParameters uint64 `json:"trainable_parameters"`
}

// An AdapterTarget is one adapted module.
type AdapterTarget struct {
	Module string `json:"module"`
	// Rank is lora_A's first dimension; Alpha and Scale follow the config
	// and its rank_pattern and alpha_pattern (s = alpha/r, alpha/√r with
	// rsLoRA).
	Rank  uint64 `json:"rank"`
	Alpha Float  `json:"alpha"`
	Scale Float  `json:"scale"`
	// In and Out are the adapted weight's dimensions, 0 when a half is
	// missing or not a matrix.
	In         uint64 `json:"in,omitempty"`
	Out        uint64 `json:"out,omitempty"`
	DoRA       bool   `json:"dora,omitempty"`
	Parameters uint64 `json:"parameters"`
}

// inspectAdapter describes c as an adapter, or returns nil when c has
// neither an adapter config nor PEFT LoRA tensors.
func inspectAdapter(c *checkpoint.Checkpoint) *AdapterInspection {
	if c.PEFT == nil && !hasLoRANames(c) {
		return nil // a model: no adapter to read (readLoRA maps every tensor)
	}
	la := readLoRA(c)
	if c.PEFT == nil && len(la.modules) == 0 {
		return nil
	}
	ai := &AdapterInspection{Layout: la.layout.String(), Targets: []AdapterTarget{}, Saved: []string{}, Alpha: Float(la.cfg.Alpha)}
	if cfg := c.PEFT; cfg != nil {
		ai.Config, ai.PEFTType, ai.Trainer, ai.BaseModel = cfg.Path, cfg.PEFTType, cfg.Trainer, cfg.BaseModel
		ai.Rank, ai.RSLoRA, ai.DoRA = cfg.Rank, cfg.RSLoRA, cfg.DoRA
		ai.TargetModules, ai.TargetRegex, ai.ModulesToSave = cfg.TargetModules, cfg.TargetRegex, cfg.ModulesToSave
		if cfg.Trainer == "" && cfg.Alpha == 0 {
			ai.Alpha = peftDefaultAlpha
		}
	}
	for _, s := range la.sources {
		n, _ := s.Tensor.NumElements()
		ai.TrainableParameters += n
	}
	for _, m := range la.modules {
		t := AdapterTarget{Module: m.path, Rank: m.rank, Alpha: Float(m.alpha), Scale: Float(m.scale), DoRA: m.mag != nil}
		for _, s := range []*Source{m.a, m.b, m.mag} {
			if s != nil {
				n, _ := s.Tensor.NumElements()
				t.Parameters += n
			}
		}
		if m.a != nil && m.b != nil && len(m.aShape) == 2 && len(m.bShape) == 2 {
			t.In, t.Out = m.aShape[1], m.bShape[0]
		}
		ai.Targets = append(ai.Targets, t)
	}
	for name := range la.saved {
		ai.Saved = append(ai.Saved, name)
	}
	slices.SortFunc(ai.Saved, strings.Compare)
	return ai
}

// hasLoRANames reports a tensor named like an adapter's (lora_A, lora_a,
// lora_magnitude_vector…): a cheap look before readLoRA.
func hasLoRANames(c *checkpoint.Checkpoint) bool {
	for _, s := range c.Shards {
		for _, t := range headerTensors(s) {
			if strings.Contains(t.Name, "lora_") {
				return true
			}
		}
	}
	return false
}
