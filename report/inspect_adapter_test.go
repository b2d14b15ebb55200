package report

import (
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

func TestInspectAdapterText(t *testing.T) {
	a := &verify.AdapterInspection{Config: "adapter_config.json", PEFTType: "LORA", BaseModel: "Qwen/Qwen3-0.6B", Rank: 8, Alpha: 16,
		TargetModules: []string{"q_proj", "v_proj"}, ModulesToSave: []string{"lm_head"}, Saved: []string{"lm_head.weight"},
		TrainableParameters: 4096, Targets: []verify.AdapterTarget{
			{Module: "model.layers.0.self_attn.q_proj", Rank: 8, Alpha: 16, Scale: 2, In: 64, Out: 64, Parameters: 1024},
			{Module: "model.layers.0.self_attn.v_proj", Rank: 4, Alpha: 32, Scale: 8, In: 64, Out: 32, Parameters: 384, DoRA: true},
		}}
	tests := []struct {
		name   string
		layout string
		rslora bool
		want   []string
		not    []string
	}{
		{name: "alpha/r", layout: "peft", want: []string{
			"adapter: LORA, config adapter_config.json\n",
			"layout peft: base_model.model.<module>.lora_A.weight [r, in], .lora_B.weight [out, r]\n",
			"base model Qwen/Qwen3-0.6B (as the config names it; not fetched)\n",
			"r 8, alpha 16, scale alpha/r, DoRA no\n",
			"target_modules q_proj, v_proj\n",
			"modules_to_save lm_head; copies held: lm_head.weight\n",
			"2 targets, 4,096 trainable parameters",
			"TARGET", "model.layers.0.self_attn.v_proj", "32×64", "384", "yes",
		}},
		{name: "rslora", layout: "peft", rslora: true, want: []string{"scale alpha/√r (rsLoRA)"}},
		{name: "torchtune", layout: "torchtune", want: []string{"layout torchtune: layers.N.<module>.lora_a.weight", "scale alpha/r"}},
		{name: "mlx-lm", layout: "mlx-lm", want: []string{"layout mlx-lm: <module>.lora_a [in, r], .lora_b [r, out]\n",
			"r 8, scale lora_parameters.scale as is (no alpha/r), DoRA no\n", "  4     -      8      32×64"}, not: []string{"alpha 16,"}},
		{name: "no layout", not: []string{"layout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.RSLoRA, a.Layout = tt.rslora, tt.layout
			r := verify.NewReport("inspect", verify.Error, nil, nil)
			r.Inspection = &verify.Inspection{Totals: verify.Totals{Tensors: 5, Parameters: 4096, Files: 1}, Adapter: a}
			out := text(t, r, Options{})
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("text lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("text has %q:\n%s", w, out)
				}
			}
		})
	}
}
