package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestDiffExpectDerived: a fine-tune fails --expect equal and passes
// --expect derived; an exact copy passes with a not_trained warning; a
// tensor moved far fails drift_excessive; partitions merge to the same.
func TestDiffExpectDerived(t *testing.T) {
	pub := tinyCheckpoint(t)
	write := func(name string, f func(fixture.Tensor) fixture.Tensor) string {
		dir := filepath.Join(t.TempDir(), name)
		var ts []fixture.Tensor
		for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
			ts = append(ts, f(x))
		}
		if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	moved := func(x fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(x, 5) }
	tuned := write("tuned", moved)
	const far = "model.layers.2.mlp.down_proj.weight"
	drifted := write("drifted", func(x fixture.Tensor) fixture.Tensor {
		if x.Name == far {
			return fixture.Perturb(x, safetensors.BF16, 0.8, 1)
		}
		return moved(x)
	})
	copied := write("copy", func(x fixture.Tensor) fixture.Tensor { return x })
	weights := []string{"--weights-only", "--values"}
	for _, tt := range []struct {
		name, exp string
		args      []string
		code      int
		says      []string
		lacks     []string
	}{
		{"fine-tune, expect equal", tuned, nil, 1, []string{"value_mismatch"}, nil},
		{"fine-tune, expect derived", tuned, []string{"--expect", "derived"}, 0,
			[]string{"compared as a fine-tune (--expect derived)", "within the drift bound", "drift per layer"}, []string{"value_mismatch", "error"}},
		{"one tensor far", drifted, []string{"--expect", "derived"}, 1, []string{"drift_excessive (1)", far, "»"}, []string{"value_mismatch"}},
		{"exact copy", copied, []string{"--expect", "derived"}, 0, []string{"warning not_trained (1)", "info unchanged (1)"}, nil},
		{"exact copy, fail on warning", copied, []string{"--expect", "derived", "--fail-on", "warning"}, 1, []string{"not_trained"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := ckptcheck(t, append(append([]string{"diff", pub, tt.exp}, weights...), tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s\n%s", code, tt.code, stderr, out)
			}
			for _, s := range tt.says {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
		})
	}

	_, out, _ := ckptcheck(t, append(append([]string{"diff", pub, drifted}, weights...), "--expect", "derived", "--format", "json")...)
	var rep struct {
		Values struct {
			Expect  string
			Tensors []struct {
				Key   string
				Bound *struct {
					MaxRelL2  float64 `json:"max_rel_l2"`
					MinCosine float64 `json:"min_cosine"`
				}
			}
		}
		Findings []struct {
			Code     string
			Got      map[string]float64
			Expected map[string]float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Values.Expect != "derived" || len(rep.Values.Tensors) == 0 || rep.Values.Tensors[0].Bound == nil || rep.Values.Tensors[0].Bound.MaxRelL2 != 0.25 {
		t.Errorf("values %+v", rep.Values)
	}
	for _, f := range rep.Findings {
		if f.Code == "drift_excessive" && (f.Got["rel_l2"] <= 0.25 || f.Expected["max_rel_l2"] != 0.25 || f.Expected["min_cosine"] != 0.95) {
			t.Errorf("finding %+v", f)
		}
	}

	// A policy that widens the bound for the MLP passes the drifted export.
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules":[{"match":"*.mlp.*","max_rel_l2":0.6,"min_cosine":0.8}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := ckptcheck(t, append(append([]string{"diff", pub, drifted}, weights...), "--expect", "derived", "--policy", policy)...); code != 0 {
		t.Errorf("widened policy: exit %d\n%s", code, out)
	}

	// In partitions, merged: the whole run's result.
	dir := t.TempDir()
	var parts []string
	for i := range 3 {
		_, out, stderr := ckptcheck(t, append(append([]string{"diff", pub, copied}, weights...), "--expect", "derived", "--format", "json", "--partition", partSpec(i, 3))...)
		path := filepath.Join(dir, partSpec(i, 3)[:1]+".json")
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err, stderr)
		}
		parts = append(parts, path)
	}
	code, merged, stderr := ckptcheck(t, append([]string{"merge"}, parts...)...)
	if code != 0 || !strings.Contains(merged, "not_trained (1)") || !strings.Contains(merged, "compared as a fine-tune") {
		t.Errorf("merge: exit %d: %s\n%s", code, stderr, merged)
	}

	for _, args := range [][]string{
		{"diff", pub, tuned, "--expect", "derived"},
		{"diff", pub, tuned, "--values", "--expect", "close"},
		{"diff", pub, tuned, "--values", "--expect", "derived", "--rtol", "1e-2"},
	} {
		if code, _, stderr := ckptcheck(t, args...); code != 2 || !strings.Contains(stderr, "expect") {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}
