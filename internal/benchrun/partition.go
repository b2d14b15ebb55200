package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// partitionScenarios time diff --values --partition and merge (issue 14's
// targets): four parts run one after another against one whole run on a
// 1.2 GB fine-tune pair where every element differs, and merging the 16
// parts' reports of a run on the Qwen3-30B-A3B tensor layout.
func partitionScenarios(bin string) []scenario {
	return []scenario{
		{
			name: "partitions (Qwen3-0.6B shape, 1.2 GB BF16, every element 1-4 ulp apart: every tensor decoded)",
			setup: func(dir string) error {
				q := fixture.Qwen3Dense06B
				if err := fixture.WriteStream(filepath.Join(dir, "pub.safetensors"), q, safetensors.BF16, nil); err != nil {
					return err
				}
				return fixture.WriteStream(filepath.Join(dir, "ulp.safetensors"), q, safetensors.BF16, ulpShift)
			},
			ours: func(dir string) [][]string {
				pub, exp := filepath.Join(dir, "pub.safetensors"), filepath.Join(dir, "ulp.safetensors")
				var parts []string
				for i := range 4 {
					parts = append(parts, fmt.Sprintf("%s diff --values --format json --fail-on never --partition %d/4 %s %s >/dev/null", bin, i, pub, exp))
				}
				return [][]string{{"sh", "-c", strings.Join(parts, " && ")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{bin, "diff", "--values", "--format", "json", filepath.Join(dir, "pub.safetensors"), filepath.Join(dir, "ulp.safetensors")}}
			},
			note: "the target: 4 parts one after another take at most 1.15x the whole run, a ratio of at least 0.87",
		},
		{
			name: "merge-moe (16 part reports of diff --values on the Qwen3-30B-A3B tensor layout: 18,867 tensors, BF16 vs F32)",
			setup: func(dir string) error {
				return writeMoEParts(dir, bin)
			},
			ours: func(dir string) [][]string {
				// Output to /dev/null: through a pipe to this (busy) process,
				// 16 MB of JSON would time the reader.
				parts := strings.Join(moeParts(dir), " ")
				return [][]string{{"sh", "-c", bin + " merge " + parts + " >/dev/null"},
					{"sh", "-c", bin + " merge --format json " + parts + " >/dev/null"}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{append([]string{"python3", "-c", "import json,sys\nfor f in sys.argv[1:]: json.load(open(f))"}, moeParts(dir)...)}
			},
			note: "the target: a merge in at most 500 ms; the baseline only parses the reports (Python's json)",
		},
	}
}

// ulpShift moves every BF16 value of a tensor by 1 to 4 units in the last
// place, away from or towards zero by a fixed pattern: a fine-tune where
// every element differs, so that no block is bit-identical and every
// tensor is decoded.
func ulpShift(t fixture.Tensor) fixture.Tensor {
	out := slices.Clone(t.Data)
	for i := 0; i+1 < len(out); i += 2 {
		v := binary.LittleEndian.Uint16(out[i:])
		k := uint16(1 + (uint32(i/2)*2654435761)>>30) // 1…4
		mag := v & 0x7fff
		if mag+k >= 0x7f80 { // would become Inf or NaN
			mag -= k
		} else {
			mag += k
		}
		binary.LittleEndian.PutUint16(out[i:], v&0x8000|mag)
	}
	return fixture.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: out}
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

// writeMoEParts writes the pair (BF16 published, a perturbed F32 export:
// a dtype warning on every tensor, so part 0 carries 18,867 structural
// findings) and runs the 16 parts of diff --values --rtol 1e-2 on it.
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
