package main

import (
	"fmt"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/quantfixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// quantScenarios time diff --values of a BF16 published model against a
// quantized export of it, against the BF16 fine-tune of the same shape
// (values-finetune-bf16's command, timed in the same scenario): issue 20's
// target is at most 1.3 times its time on amd64, 2 portable. The export is
// a quantized fine-tune: its Linear weights quantized from the published
// values, its other tensors moved 1 to 4 ulps as the fine-tune's are, so
// that every element of both is judged; it is compared as such (--expect
// derived: the drift bound plus the encoding's own), and the BF16 fine-tune
// is timed that way too.
func quantScenarios(e env) []scenario {
	file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
	valuesDiff := func(a, b string) []string { return []string{e.bin, "diff", "--values", "--rtol", "1e-1", a, b} }
	derived := func(a, b string) []string { return []string{e.bin, "diff", "--values", "--expect", "derived", a, b} }
	moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, finetuneSeed) }
	bf16Size := size(e.dense, 2)
	quantized := func(id, what string, z quantfixture.Quantizer) scenario {
		return scenario{
			id: id,
			title: fmt.Sprintf("BF16 published vs %s of the same values (%s shape, %s BF16; page cache warm), "+
				"against the BF16 fine-tune", what, e.denseName, bf16Size),
			setup: func(dir string) error {
				if err := writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved", safetensors.BF16, moved}}); err != nil {
					return err
				}
				return quantfixture.WriteExport(filepath.Join(dir, "quantized"), e.dense, z, moved)
			},
			ours: func(dir string) [][]string {
				return [][]string{derived(file(dir, "pub"), filepath.Join(dir, "quantized"))}
			},
			baselines: func(dir string) [][]string {
				return [][]string{valuesDiff(file(dir, "pub"), file(dir, "moved")), derived(file(dir, "pub"), file(dir, "moved"))}
			},
			floor:  true,
			ratios: "quantized time / the BF16 fine-tune's (first: values-finetune-bf16's command); target ≤ 1.3 on amd64, ≤ 2 portable",
		}
	}
	return []scenario{
		quantized("values-quant-fp8block", "an FP8 block-128 export (quant_method fp8, weight_scale_inv)", quantfixture.BlockFP8{Rows: 128, Cols: 128}),
		quantized("values-quant-gptq", "a GPTQ int4 g128 export (sym, desc_act false, rounded to the grid)", quantfixture.GPTQ{Bits: 4, Group: 128}),
	}
}
