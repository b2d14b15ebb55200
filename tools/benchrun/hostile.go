package main

import (
	"encoding/binary"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// hostileScenario times validate, inspect and a header-only diff on the
// hostile inputs of the hardening issue: small files whose headers and
// configs ask for enormous work, and a header of the largest size the
// reference accepts (~1.4M tensors). Targets: inputs of at most 1 MB in
// 2 s and 256 MiB; the largest header validated in 400 MiB and diffed in
// 800 MiB. The baseline is Python's json.loads of the largest header.
func hostileScenario(e env) scenario {
	bin := e.bin
	return scenario{
		id:    "hostile",
		title: "hostile headers and configs (targets: ≤ 1 MB inputs in ≤ 2 s and ≤ 256 MiB; a 100 MB header: validate ≤ 400 MiB, diff ≤ 800 MiB)",
		setup: writeHostile,
		ours: func(dir string) [][]string {
			p := func(n string) string { return filepath.Join(dir, n) }
			return [][]string{
				{bin, "diff", p("pub"), p("stacked")},
				{bin, "diff", p("pub"), p("stacked100")},
				{bin, "diff", p("pub"), p("permuted")},
				{bin, "validate", p("layers")},
				{bin, "inspect", p("layers")},
				{bin, "diff", p("pub"), p("layers")},
				{bin, "validate", p("max")},
				{bin, "diff", p("max"), p("max2")},
			}
		},
		baselines: func(dir string) [][]string {
			script := "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; print(len(json.loads(f.read(n))))"
			return [][]string{{"python3", "-c", script, filepath.Join(dir, "max", "model.safetensors")}}
		},
		pairs: func(our, _ int) bool { return our >= 6 },
	}
}

// writeHostile writes the hostile inputs under dir.
func writeHostile(dir string) error {
	q := fixture.TinyMoE
	if err := fixture.WriteSharded(filepath.Join(dir, "pub"), q.Tensors(safetensors.BF16), 2, q.Config("bfloat16")); err != nil {
		return err
	}
	for _, f := range []struct {
		name, header, config string
		data                 int
	}{
		{"stacked", fixture.StackedZeroHeader(1), `{"model_type":"qwen3_moe"}`, 0},
		{"stacked100", fixture.StackedZeroHeader(100), `{"model_type":"qwen3_moe"}`, 0},
		{"permuted", fixture.PermutedRowsHeader(), "", 16},
		{"layers", fixture.StackedZeroHeader(1), `{"model_type":"qwen3_moe","num_hidden_layers":18446744073709551615,"num_attention_heads":0,"hidden_size":-1,"head_dim":"x"}`, 0},
	} {
		if err := writeRaw(filepath.Join(dir, f.name, "model.safetensors"), f.header, f.data); err != nil {
			return err
		}
		if f.config != "" {
			if err := os.WriteFile(filepath.Join(dir, f.name, "config.json"), []byte(f.config), 0o644); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{"max", "max2"} {
		if err := fixture.WriteMaxHeader(filepath.Join(dir, name, "model.safetensors")); err != nil {
			return err
		}
	}
	return nil
}

func writeRaw(path, header string, data int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(append(b, header...), make([]byte, data)...)
	return os.WriteFile(path, b, 0o644)
}
