package main

import (
	"fmt"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// ggufScenarios time diff --values of a BF16 published checkpoint against
// its GGUF conversion (issue 25's target: at most 1.3× the BF16 fine-tune
// scenario's time on amd64 for Q8_0 and Q4_K), with that fine-tune pair
// timed in the same run as the baseline.
func ggufScenarios(e env) []scenario {
	var out []scenario
	for _, q := range []struct {
		id, name string
		typ      uint32
		ftype    uint32 // general.file_type: LLAMA_FTYPE_MOSTLY_Q8_0, _Q4_K_S
		quantize func([]byte, []float32) []byte
	}{
		{"q8_0", "Q8_0", 8, 7, w.AppendQ8_0},
		{"q4_k", "Q4_K", 12, 14, w.AppendQ4K},
	} {
		gguf := func(dir string) string { return filepath.Join(dir, "model-"+q.id+".gguf") }
		file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
		out = append(out, scenario{
			id: "values-gguf-" + q.id,
			title: fmt.Sprintf("BF16 published vs its GGUF conversion, every matrix %s, norms F32 (convert_hf_to_gguf + "+
				"llama-quantize --pure; %s shape, %s BF16; page cache warm), against the BF16 fine-tune pair", q.name, e.denseName, size(e.dense, 2)),
			setup: func(dir string) error {
				moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, finetuneSeed) }
				if err := writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved", safetensors.BF16, moved}}); err != nil {
					return err
				}
				return w.WriteQwen3(gguf(dir), e.dense, q.typ, q.ftype, q.quantize)
			},
			ours: func(dir string) [][]string {
				return [][]string{{e.bin, "diff", "--values", file(dir, "pub"), gguf(dir)}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{e.bin, "diff", "--values", "--rtol", "1e-1", file(dir, "pub"), file(dir, "moved")}}
			},
			floor:  true,
			ratios: "the GGUF diff's time / the BF16 fine-tune diff's (values-finetune-bf16); the target is at most 1.3 on amd64, 2 portable",
		})
	}
	return out
}
