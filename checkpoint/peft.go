package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
)

// PEFTConfig is what a PEFT adapter's adapter_config.json says, read the
// way huggingface/peft writes it (src/peft/config.py, tuners/lora/config.py
// @ v0.20.0): the adapter's kind and the model it adapts. mlx-lm writes a
// file of the same name with its own keys (ml-explore/mlx-lm mlx_lm/lora.py
// @ d78bf58e, save_config(vars(args)): "model", "fine_tune_type",
// "lora_parameters": {"rank", ...}), read into the same fields. A checkpoint
// directory holding one is a fine-tune's adapter (adapter_model.safetensors),
// not a model.
type PEFTConfig struct {
	// Name is the file's name in the checkpoint, Path how reports name it.
	Name, Path string
	// PEFTType is peft_type ("LORA", "IA3", ...); BaseModel is
	// base_model_name_or_path, "" when the file leaves it out or null.
	PEFTType, BaseModel string
	// Rank is r, the LoRA rank, 0 when absent or not a positive integer.
	Rank uint64
	// Trainer is "mlx-lm" for mlx-lm's own adapter_config.json (its
	// lora_parameters key), "" for PEFT's.
	Trainer string
	// Scale is mlx-lm's lora_parameters.scale, the merge's scale as is
	// (not alpha/r); 0 when absent.
	Scale float64
	// Alpha is lora_alpha (0 when absent: LoraConfig's default is 8); RSLoRA is use_rslora (the
	// scale alpha/√r, not alpha/r); DoRA is use_dora.
	Alpha        float64
	RSLoRA, DoRA bool
	// TargetModules is target_modules as a list of module-name suffixes,
	// or TargetRegex when it is one string (a regular expression, matched
	// in full, or "all-linear").
	TargetModules []string
	TargetRegex   string
	// ModulesToSave are the modules saved whole beside the adapter.
	ModulesToSave []string
	// RankPattern and AlphaPattern override r and lora_alpha per module
	// (keys are module-name patterns).
	RankPattern  map[string]uint64
	AlphaPattern map[string]float64
}

// The fields read for LoRA are those of LoraConfig (src/peft/tuners/lora/config.py
// @ 003369494699fedd543fe38d16e52df96aeae743): r, lora_alpha, use_rslora,
// use_dora, target_modules, modules_to_save, rank_pattern, alpha_pattern.

// ParsePEFTConfig parses adapter_config.json's bytes. Bytes that are not a
// JSON object are an error, and the PEFTConfig nil; fields of the wrong
// type are left at their zero values.
func ParsePEFTConfig(b []byte) (*PEFTConfig, error) {
	p := &PEFTConfig{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, notObject(b, err)
	}
	str := func(key string, dst *string) {
		if v, ok := fields[key]; ok {
			_ = json.Unmarshal(v, dst) // a wrong type leaves dst empty
		}
	}
	str("peft_type", &p.PEFTType)
	str("base_model_name_or_path", &p.BaseModel)
	if v, ok := fields["r"]; ok {
		_ = json.Unmarshal(v, &p.Rank)
	}
	if v, ok := fields["lora_parameters"]; ok {
		p.Trainer = "mlx-lm"
		var lp struct {
			Rank uint64 `json:"rank"`
		}
		if json.Unmarshal(v, &lp) == nil && p.Rank == 0 {
			p.Rank = lp.Rank
		}
		var sc struct {
			Scale float64 `json:"scale"`
		}
		if json.Unmarshal(v, &sc) == nil { // apart from rank: one of the wrong type leaves the other
			p.Scale = sc.Scale
		}
		if p.BaseModel == "" {
			str("model", &p.BaseModel)
		}
		if p.PEFTType == "" {
			str("fine_tune_type", &p.PEFTType)
		}
	}
	if v, ok := fields["lora_alpha"]; ok {
		_ = json.Unmarshal(v, &p.Alpha)
	}
	for key, dst := range map[string]*bool{"use_rslora": &p.RSLoRA, "use_dora": &p.DoRA} {
		if v, ok := fields[key]; ok {
			_ = json.Unmarshal(v, dst)
		}
	}
	if v, ok := fields["target_modules"]; ok {
		if json.Unmarshal(v, &p.TargetModules) != nil {
			p.TargetModules = nil
			_ = json.Unmarshal(v, &p.TargetRegex)
		}
	}
	if v, ok := fields["modules_to_save"]; ok {
		_ = json.Unmarshal(v, &p.ModulesToSave)
	}
	if v, ok := fields["rank_pattern"]; ok {
		_ = json.Unmarshal(v, &p.RankPattern)
	}
	if v, ok := fields["alpha_pattern"]; ok {
		_ = json.Unmarshal(v, &p.AlphaPattern)
	}
	return p, nil
}

// readPEFTConfig reads adapter_config.json beside the files, if any.
func (c *Checkpoint) readPEFTConfig(ctx context.Context) error {
	const name = "adapter_config.json"
	b, err := readSmall(ctx, c.Source, name, maxJSONFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && tooLarge(err):
		c.PEFTErr = err
	case err != nil:
		return pathError(c.Source.Path(name), err)
	default:
		c.PEFT, c.PEFTErr = ParsePEFTConfig(b)
	}
	if c.PEFTErr != nil {
		c.PEFT = &PEFTConfig{}
	}
	c.PEFT.Name, c.PEFT.Path = name, c.Source.Path(name)
	return nil
}
