package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// partitionScenarios time diff --values --partition and merge (issue 14's
// targets): four parts run one after another against one whole run on the
// fine-tune pair where every element differs, and merging the 16 parts'
// reports of a run on the Qwen3-30B-A3B tensor layout.
func partitionScenarios(e env) []scenario {
	bin := e.bin
	file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
	moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, finetuneSeed) }
	return []scenario{
		{
			id: "partitions",
			title: fmt.Sprintf("4 parts of diff --values run one after another vs one whole run: a fine-tune that moved "+
				"every element 1 to 4 ulps (%s shape, %s BF16 each; every tensor decoded; page cache warm)", e.denseName, size(e.dense, 2)),
			setup: func(dir string) error {
				return writeFiles(dir, e.dense, []valueFile{{"pub", safetensors.BF16, nil}, {"moved", safetensors.BF16, moved}})
			},
			ours: func(dir string) [][]string {
				var parts []string
				for i := range 4 {
					parts = append(parts, fmt.Sprintf("%s diff --values --rtol 1e-1 --format json --fail-on never --partition %d/4 %s %s >/dev/null",
						bin, i, file(dir, "pub"), file(dir, "moved")))
				}
				return [][]string{{"sh", "-c", strings.Join(parts, " && ")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{"sh", "-c", fmt.Sprintf("%s diff --values --rtol 1e-1 --format json %s %s >/dev/null", bin, file(dir, "pub"), file(dir, "moved"))}}
			},
			floor:  true,
			ratios: "4 parts' time / the whole run's; the target is at most 1.15",
		},
		{
			id:    "merge-moe",
			title: "ckptcheck merge of the 16 part reports of diff --values --rtol 1e-2 on the Qwen3-30B-A3B tensor layout (18,867 tensors; BF16 vs a perturbed F32 export, so part 0 carries 18,867 dtype warnings)",
			setup: func(dir string) error {
				return writeMoEParts(dir, bin)
			},
			ours: func(dir string) [][]string {
				// Output to /dev/null: through a pipe to this process, 16 MB
				// of JSON would time the reader.
				parts := strings.Join(moeParts(dir), " ")
				return [][]string{{"sh", "-c", bin + " merge " + parts + " >/dev/null"},
					{"sh", "-c", bin + " merge --format json " + parts + " >/dev/null"}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{append([]string{"python3", "-c", "import json,sys\nfor f in sys.argv[1:]: json.load(open(f))"}, moeParts(dir)...)}
			},
			ratios: "python's json.load of the reports / ckptcheck merge; the target is a merge in at most 500 ms",
		},
	}
}

// moeLayout is Qwen3-30B-A3B's tensor layout (48 layers of 128 experts,
// 18,867 tensors) with its dimensions scaled down so that its values can
// be compared in seconds: what a merge costs grows with the tensors and
// findings, not their bytes.
func moeLayout() fixture.Qwen3 {
	q := fixture.Qwen3MoE30B
	q.Vocab, q.Hidden, q.Heads, q.KVHeads, q.HeadDim, q.Intermediate, q.MoEIntermediate = 512, 32, 4, 2, 8, 64, 8
	return q
}

func moeParts(dir string) []string {
	var out []string
	for i := range 16 {
		out = append(out, filepath.Join(dir, fmt.Sprintf("part-%02d.json", i)))
	}
	return out
}

// writeMoEParts writes the pair and runs the 16 parts of diff --values on it.
func writeMoEParts(dir, bin string) error {
	q := moeLayout()
	pub := q.Tensors(safetensors.BF16)
	exp := make([]fixture.Tensor, len(pub))
	for i, t := range pub {
		exp[i] = fixture.Perturb(t, safetensors.F32, 1e-3, uint64(i))
	}
	if err := fixture.WriteSharded(filepath.Join(dir, "pub"), pub, 16, q.Config("bfloat16")); err != nil {
		return err
	}
	if err := fixture.WriteSharded(filepath.Join(dir, "exp"), exp, 16, q.Config("float32")); err != nil {
		return err
	}
	for i, part := range moeParts(dir) {
		out, err := os.Create(part)
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, "diff", "--values", "--rtol", "1e-2", "--format", "json", "--fail-on", "never",
			"--partition", fmt.Sprintf("%d/16", i), filepath.Join(dir, "pub"), filepath.Join(dir, "exp"))
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		err = cmd.Run()
		out.Close()
		if err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
	}
	return nil
}
