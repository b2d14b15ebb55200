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
		rslora bool
		want   []string
	}{
		{name: "alpha/r", want: []string{
			"adapter: LORA, config adapter_config.json\n",
			"base model Qwen/Qwen3-0.6B (as the config names it; not fetched)\n",
			"r 8, alpha 16, scale alpha/r, DoRA no\n",
			"target_modules q_proj, v_proj\n",
			"modules_to_save lm_head; copies held: lm_head.weight\n",
			"2 targets, 4,096 trainable parameters",
			"TARGET", "model.layers.0.self_attn.v_proj", "32×64", "384", "yes",
		}},
		{name: "rslora", rslora: true, want: []string{"scale alpha/√r (rsLoRA)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.RSLoRA = tt.rslora
			r := verify.NewReport("inspect", verify.Error, nil, nil)
			r.Inspection = &verify.Inspection{Totals: verify.Totals{Tensors: 5, Parameters: 4096, Files: 1}, Adapter: a}
			out := text(t, r, Options{})
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("text lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
