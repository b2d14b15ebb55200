package verify

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestInspectAdapter(t *testing.T) {
	f := newLoRAFixture(3, false)
	tests := []struct {
		name      string
		rslora    bool
		wantScale float64
	}{
		{name: "alpha/r", wantScale: loraAlpha / loraR},
		{name: "rslora", rslora: true, wantScale: loraAlpha / math.Sqrt(loraR)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.rslora = tt.rslora
			ins := Inspect(openCk(t, f.writeAdapter(t, t.TempDir(), "")), nil, false)
			a := ins.Adapter
			if a == nil {
				t.Fatal("no adapter section")
			}
			if a.PEFTType != "LORA" || a.BaseModel != "Qwen/Qwen3-0.6B" || a.Rank != loraR || a.Alpha != loraAlpha || a.RSLoRA != tt.rslora || a.DoRA {
				t.Errorf("config: %+v", a)
			}
			if !slices.Equal(a.TargetModules, []string{"q_proj", "v_proj"}) || !slices.Equal(a.ModulesToSave, []string{"lm_head"}) || !slices.Equal(a.Saved, []string{"lm_head.weight"}) {
				t.Errorf("targets %v, modules_to_save %v, saved %v", a.TargetModules, a.ModulesToSave, a.Saved)
			}
			// Two pairs of r·h each side plus the lm_head copy.
			if want := uint64(2*2*loraR*loraH + loraV*loraH); a.TrainableParameters != want || ins.Totals.Parameters != want {
				t.Errorf("trainable %d (totals %d), want %d", a.TrainableParameters, ins.Totals.Parameters, want)
			}
			if len(a.Targets) != 2 {
				t.Fatalf("targets: %+v", a.Targets)
			}
			for i, tg := range a.Targets {
				if tg.Module != f.targets[i] || tg.Rank != loraR || tg.In != loraH || tg.Out != loraH || tg.Parameters != 2*loraR*loraH ||
					tg.Alpha != loraAlpha || math.Abs(float64(tg.Scale)-tt.wantScale) > 1e-12 {
					t.Errorf("target %d: %+v", i, tg)
				}
			}
			b, err := json.Marshal(ins)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"adapter":{`, `"trainable_parameters":4096`, `"rank":8`, `"modules_to_save":["lm_head"]`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("JSON lacks %s: %s", want, b)
				}
			}
		})
	}
	if ins := Inspect(openCk(t, f.write(t, t.TempDir(), f.base)), nil, false); ins.Adapter != nil {
		t.Errorf("a model has an adapter section: %+v", ins.Adapter)
	}
}
