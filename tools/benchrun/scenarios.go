package main

import (
	"fmt"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A scenario is a set of generated files, the ckptcheck commands timed on
// them, and the baselines they are timed against.
type scenario struct {
	id    string // what -only matches
	title string
	setup func(dir string) error
	// ours are ckptcheck's commands, timed against each baseline (or
	// against the base binary).
	ours, baselines func(dir string) [][]string
	// pairs, if set, says which (ours, baseline) ratios mean something.
	pairs func(our, baseline int) bool
	// report, if set, prints more after the timings, given how many
	// times each command ran (the warm-up run included).
	report func(runs []int)
	// teardown, if set, stops what setup started.
	teardown func()
	// floor: the baselines only read the files, a floor no comparison can
	// beat, and the ratio printed is ckptcheck's time over theirs (1: at
	// the speed of reading). Otherwise it is the baseline's time over
	// ckptcheck's (above 1: ckptcheck is faster).
	floor bool
	// ratios, if set, says what the ratios printed are instead.
	ratios string
}

// env is what the scenarios are made from.
type env struct {
	bin, self            string // the binary timed; this program, for the nlp baselines
	diffKeys, compareF32 string // the Python baselines' scripts
	numpy                string // a python with numpy, or ""
	dense                fixture.Qwen3
	denseName            string
}

// smallDense is a Qwen3 of 7.6 MB in BF16, for -small.
var smallDense = fixture.Qwen3{Vocab: 8192, Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64,
	Intermediate: 768, Tied: true, Seed: 6}

// The seed of the fine-tune fixtures' moves: the BF16 and F32 exports of
// the fine-tune hold the same values.
const finetuneSeed = 12

func scenarios(e env) []scenario {
	bin := e.bin
	file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
	bf16Size, f32Size := size(e.dense, 2), size(e.dense, 4)
	moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, finetuneSeed) }
	valuesDiff := func(dir, a, b string) []string {
		return []string{bin, "diff", "--values", "--rtol", "1e-1", file(dir, a), file(dir, b)}
	}
	cat := func(dir, a, b string) []string {
		return []string{"sh", "-c", "cat " + file(dir, a) + " " + file(dir, b) + " > /dev/null"}
	}
	return []scenario{
		{
			id:    "validate-moe",
			title: "Qwen3-30B-A3B shape: 16 sparse shards, 18,867 tensors, 61 GB",
			setup: func(dir string) error {
				return fixture.WriteSparse(filepath.Join(dir, "moe"), fixture.Qwen3MoE30B, safetensors.BF16, 16)
			},
			ours: func(dir string) [][]string {
				moe := filepath.Join(dir, "moe")
				return [][]string{{bin, "validate", moe}, {bin, "inspect", moe}, {bin, "inspect", "--tree", moe}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{e.self, "nlp-validate", filepath.Join(dir, "moe")}}
			},
			pairs: func(our, _ int) bool { return our == 0 },
		},
		{
			id:    "diff-moe",
			title: "two Qwen3-30B-A3B-shaped sparse checkpoints, BF16 vs F32, 18,867 tensors each",
			setup: func(dir string) error {
				if err := fixture.WriteSparse(filepath.Join(dir, "pub"), fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
					return err
				}
				return fixture.WriteSparse(filepath.Join(dir, "exp"), fixture.Qwen3MoE30B, safetensors.F32, 16)
			},
			ours: func(dir string) [][]string {
				return [][]string{{bin, "diff", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
					{bin, "diff", "--format", "json", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{
					{"python3", e.diffKeys, filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
					{e.self, "nlp-diff", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
				}
			},
			pairs: func(our, _ int) bool { return our == 0 },
		},
		{
			id: "values",
			title: fmt.Sprintf("%s shape, %s BF16, random values: an identical copy, an F32 upcast, "+
				"a ~1e-3 perturbation; page cache warm", e.denseName, bf16Size),
			setup: func(dir string) error {
				perturb := func(t fixture.Tensor) fixture.Tensor { return fixture.Perturb(t, safetensors.BF16, 1e-3, 11) }
				return writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"same", safetensors.BF16, nil},
					{"f32", safetensors.F32, fixture.Upcast}, {"perturbed", safetensors.BF16, perturb}})
			},
			ours: func(dir string) [][]string {
				f := func(n string) string { return file(dir, n) }
				return [][]string{
					{bin, "diff", "--values", f("pub"), f("same")},
					{bin, "diff", "--values", f("pub"), f("f32")},
					{bin, "diff", "--values", f("pub"), f("perturbed")},
				}
			},
			baselines: func(dir string) [][]string {
				f := func(n string) string { return file(dir, n) }
				out := [][]string{
					{"sh", "-c", "dd if=" + f("pub") + " of=/dev/null bs=4M status=none && dd if=" + f("same") + " of=/dev/null bs=4M status=none"},
					{"cmp", f("pub"), f("same")},
					{"sh", "-c", "dd if=" + f("pub") + " of=/dev/null bs=4M status=none && dd if=" + f("f32") + " of=/dev/null bs=4M status=none"},
				}
				if e.numpy != "" {
					out = append(out, []string{e.numpy, e.compareF32, f("pub"), f("f32")})
				} else {
					fmt.Println("  (numpy baseline skipped: no numpy; apt-get install python3-numpy)")
				}
				return out
			},
			// identical pair: dd of both files, cmp; F32 pair: dd of both, numpy.
			pairs: func(our, b int) bool { return (our == 0 && b <= 1) || (our == 1 && b >= 2) },
		},
		// A fine-tune changed every element: each is moved 1 to 4 ulps
		// (fixture.MoveULPs), so every value is judged against the
		// tolerance. The floor is reading both files.
		{
			id: "values-finetune-bf16",
			title: fmt.Sprintf("a fine-tune that moved every element 1 to 4 ulps: BF16 published vs BF16 "+
				"(%s shape, %s each; page cache warm)", e.denseName, bf16Size),
			setup: func(dir string) error {
				return writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved", safetensors.BF16, moved}})
			},
			ours:      func(dir string) [][]string { return [][]string{valuesDiff(dir, "pub", "moved")} },
			baselines: func(dir string) [][]string { return [][]string{cat(dir, "pub", "moved")} },
			floor:     true,
		},
		{
			id: "values-finetune-f32",
			title: fmt.Sprintf("the same fine-tune exported as the exact F32 upcast (torchtitan): BF16 published vs F32 "+
				"(%s shape, %s + %s; page cache warm)", e.denseName, bf16Size, f32Size),
			setup: func(dir string) error {
				upcast := func(t fixture.Tensor) fixture.Tensor { return fixture.Upcast(moved(t)) }
				return writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved-f32", safetensors.F32, upcast}})
			},
			ours:      func(dir string) [][]string { return [][]string{valuesDiff(dir, "pub", "moved-f32")} },
			baselines: func(dir string) [][]string { return [][]string{cat(dir, "pub", "moved-f32")} },
			floor:     true,
		},
		{
			id: "values-finetune-f16",
			title: fmt.Sprintf("a fine-tune that moved every element 1 to 4 ulps: F16 published vs F16 "+
				"(%s shape, %s each; page cache warm)", e.denseName, bf16Size),
			setup: func(dir string) error {
				movedF16 := func(t fixture.Tensor) fixture.Tensor { return moved(fixture.ToF16(t)) }
				return writeFiles(dir, e.dense, []valueFile{{"pub-f16", safetensors.F16, fixture.ToF16}, {"moved-f16", safetensors.F16, movedF16}})
			},
			ours:      func(dir string) [][]string { return [][]string{valuesDiff(dir, "pub-f16", "moved-f16")} },
			baselines: func(dir string) [][]string { return [][]string{cat(dir, "pub-f16", "moved-f16")} },
			floor:     true,
		},
		{
			id:    "manifest",
			title: fmt.Sprintf("manifest of a 2-shard checkpoint (%s shape, %s BF16; page cache warm; target: at least 90%% of openssl's throughput)", e.denseName, bf16Size),
			setup: func(dir string) error {
				return fixture.WriteStreamSharded(filepath.Join(dir, "ck"), e.dense, safetensors.BF16, 2)
			},
			ours: func(dir string) [][]string { return [][]string{{bin, "manifest", filepath.Join(dir, "ck")}} },
			baselines: func(dir string) [][]string {
				s1 := filepath.Join(dir, "ck", "model-00001-of-00002.safetensors")
				s2 := filepath.Join(dir, "ck", "model-00002-of-00002.safetensors")
				return [][]string{
					// What openssl dgst does with the two files: one after
					// the other, on one core.
					{"openssl", "dgst", "-sha256", s1, s2},
					// The strict baseline: one openssl per file, both cores.
					{"sh", "-c", "openssl dgst -sha256 " + s1 + " >/dev/null & openssl dgst -sha256 " + s2 + " >/dev/null; wait"},
				}
			},
		},
		hostileScenario(e),
	}
}

// allScenarios are the scenarios of this file, the remote and the GGUF ones.
func allScenarios(e env) []scenario {
	all := append(scenarios(e), remoteScenarios(e.bin, e.self)...)
	all = append(all, torchScenarios(e)...)
	all = append(all, quantScenarios(e)...)
	all = append(all, ggufScenarios(e)...)
	all = append(all, loraScenarios(e)...)
	return append(all, inferScenario(e))
}

type valueFile struct {
	name      string
	dtype     safetensors.DType
	transform func(fixture.Tensor) fixture.Tensor
}

// writeFiles writes q once per file, as dir/name.safetensors.
func writeFiles(dir string, q fixture.Qwen3, files []valueFile) error {
	for _, f := range files {
		if err := fixture.WriteStream(filepath.Join(dir, f.name+".safetensors"), q, f.dtype, f.transform); err != nil {
			return err
		}
	}
	return nil
}

// size is q's data size with elements of width bytes, as "1.2 GB".
func size(q fixture.Qwen3, width int) string {
	var n uint64
	for _, s := range q.Specs() {
		e := uint64(width)
		for _, d := range s.Shape {
			e *= d
		}
		n += e
	}
	if n >= 1e9 {
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
