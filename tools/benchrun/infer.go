package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Issue 23's targets: inference (names, shapes, the adapter written and
// applied) in at most 200 ms on the Qwen3-30B-A3B shape renamed to
// torchtitan's, plus the sample reads; at most 100 ms on the 0.6B dense
// pair.
const inferTargetMoE, inferTargetDense = 200 * time.Millisecond, 100 * time.Millisecond

// torchtitanName renames an HF Qwen3 name to torchtitan's, per expert.
var torchtitanName = strings.NewReplacer("model.layers.", "layers.", "self_attn.q_proj", "attention.wq",
	"self_attn.k_proj", "attention.wk", "self_attn.v_proj", "attention.wv", "self_attn.o_proj", "attention.wo",
	"self_attn.q_norm", "attention.q_norm", "self_attn.k_norm", "attention.k_norm",
	"input_layernorm", "attention_norm", "post_attention_layernorm", "ffn_norm",
	"mlp.experts.", "moe.experts.", "mlp.gate.", "moe.router.gate.", "mlp.", "feed_forward.",
	"gate_proj", "w1", "up_proj", "w3", "down_proj", "w2", "model.embed_tokens", "tok_embeddings", "model.norm", "norm").Replace

// inferScenario times diff --adapter exported=infer on the MoE shape's
// headers (sparse files whose sampled tensors hold values: see
// writeSampledMoE) and on the dense pair with real values,
// against the same diff of a checkpoint with itself (no adapter). Its
// report times the inference alone, in this process, against the targets.
func inferScenario(e env) scenario {
	bin := e.bin
	p := func(dir, n string) string { return filepath.Join(dir, n) }
	return scenario{
		id: "infer",
		title: fmt.Sprintf("diff --adapter exported=infer: Qwen3-30B-A3B headers (18,867 tensors a side) renamed to torchtitan's, "+
			"and the %s pair with values (targets: inference ≤ %v on the MoE plus sample reads, ≤ %v on the 0.6B pair)",
			e.denseName, inferTargetMoE, inferTargetDense),
		setup: func(dir string) error {
			if err := writeSampledMoE(p(dir, "moe"), p(dir, "moe-tt"), fixture.Qwen3MoE30B); err != nil {
				return err
			}
			if err := os.MkdirAll(p(dir, "dense"), 0o755); err != nil {
				return err
			}
			if err := fixture.WriteStream(p(dir, "dense/model.safetensors"), e.dense, safetensors.BF16, nil); err != nil {
				return err
			}
			if err := fixture.WriteJSON(p(dir, "dense/config.json"), e.dense.Config("bfloat16")); err != nil {
				return err
			}
			return copyRenamed(p(dir, "dense"), p(dir, "dense-tt"), torchtitanName)
		},
		ours: func(dir string) [][]string {
			return [][]string{
				{bin, "diff", "--adapter", "exported=infer", p(dir, "moe"), p(dir, "moe-tt")},
				{bin, "diff", "--adapter", "exported=infer", p(dir, "dense"), p(dir, "dense-tt")},
			}
		},
		baselines: func(dir string) [][]string {
			return [][]string{{bin, "diff", p(dir, "moe"), p(dir, "moe")}, {bin, "diff", p(dir, "dense"), p(dir, "dense")}}
		},
		pairs:  func(our, b int) bool { return our == b },
		floor:  true,
		ratios: "the inferred diff's time / the same checkpoint's diff with itself; the difference is inference, its samples and the adapter's views",
		report: func([]int) {
			fmt.Println("  inference alone (adapter.Infer, Settle, the adapter parsed and applied; median of 5, in this process):")
			for _, c := range []struct {
				name   string
				q      fixture.Qwen3
				target time.Duration
			}{{"Qwen3-30B-A3B, torchtitan names", fixture.Qwen3MoE30B, inferTargetMoE}, {e.denseName + ", torchtitan names", e.dense, inferTargetDense}} {
				d, err := timeInference(c.q)
				verdict := "ok"
				switch {
				case err != nil:
					verdict = err.Error()
				case d > c.target:
					verdict = "MISSED"
				}
				fmt.Printf("    %-40s %8.1f ms   target ≤ %v: %s\n", c.name, float64(d.Microseconds())/1000, c.target, verdict)
			}
		},
	}
}

// timeInference is the median of five inferences of q's names renamed to
// torchtitan's, each settled with samples that fit (the published values
// under every candidate: all equal, the worst case for Settle) and its
// adapter applied.
func timeInference(q fixture.Qwen3) (time.Duration, error) {
	var pub, exp []safetensors.TensorInfo
	for _, s := range q.Specs() {
		pub = append(pub, safetensors.TensorInfo{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape})
		exp = append(exp, safetensors.TensorInfo{Name: torchtitanName(s.Name), DType: safetensors.BF16, Shape: s.Shape})
	}
	env := adapter.Env{"num_attention_heads": uint64(q.Heads), "num_key_value_heads": uint64(q.KVHeads), "head_dim": uint64(q.HeadDim)}
	var ds []time.Duration
	for range 5 {
		start := time.Now()
		inf, err := adapter.Infer(pub, exp, env, adapter.InferOptions{})
		if err != nil {
			return 0, err
		}
		samples := inf.Samples()
		for i := range samples {
			n := samples[i].Rows * samples[i].Cols
			samples[i].Pub, samples[i].Exp = make([]float64, n), make([]float64, n)
		}
		inf.Settle(samples)
		a, err := inf.Adapter()
		if err != nil {
			return 0, err
		}
		adapter.Chain{a}.Apply(exp, env)
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// writeSampledMoE writes q's headers as one sparse file, HF names, in pub,
// and again renamed to torchtitan's in exp, each with a config: full-size
// checkpoints of little disk. The tensors inference samples (asked of
// adapter.Infer on the same headers) hold values where it reads them, the
// same on both sides, so that the samples settle the shape-alike
// templates as a real pair's do; every other byte is a hole.
func writeSampledMoE(pub, exp string, q fixture.Qwen3) error {
	var pubInfos, expInfos []safetensors.TensorInfo
	for _, s := range q.Specs() {
		pubInfos = append(pubInfos, safetensors.TensorInfo{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape})
		expInfos = append(expInfos, safetensors.TensorInfo{Name: torchtitanName(s.Name), DType: safetensors.BF16, Shape: s.Shape})
	}
	env := adapter.Env{"num_attention_heads": uint64(q.Heads), "num_key_value_heads": uint64(q.KVHeads), "head_dim": uint64(q.HeadDim)}
	inf, err := adapter.Infer(pubInfos, expInfos, env, adapter.InferOptions{})
	if err != nil {
		return err
	}
	sampled := map[int]bool{} // by spec: published i is exported i renamed
	for _, s := range inf.Samples() {
		sampled[s.Published.Segments[0].Source] = true
		for _, seg := range s.Exported.Segments {
			sampled[seg.Source] = true
		}
	}
	for _, side := range []struct {
		dir   string
		infos []safetensors.TensorInfo
	}{{pub, pubInfos}, {exp, expInfos}} {
		if err := writeSparseFilled(side.dir, side.infos, pubInfos, sampled); err != nil {
			return err
		}
		if err := fixture.WriteJSON(filepath.Join(side.dir, "config.json"), q.Config("bfloat16")); err != nil {
			return err
		}
	}
	return nil
}

// writeSparseFilled writes infos as one sparse file in dir; tensor i of
// filled gets, in its first 16 rows (a vector: all of it), values drawn
// from its published name (hf[i]), so both sides hold the same ones.
func writeSparseFilled(dir string, infos, hf []safetensors.TensorInfo, filled map[int]bool) error {
	hdr, ordered, err := safetensors.EncodeHeader(infos, map[string]string{"format": "pt"})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	at := make(map[string]safetensors.TensorInfo, len(ordered))
	for _, t := range ordered {
		at[t.Name] = t
	}
	_, err = f.Write(hdr)
	if err == nil {
		err = f.Truncate(int64(len(hdr)) + int64(ordered[len(ordered)-1].DataOffsets[1]))
	}
	for i := range infos {
		if err != nil || !filled[i] {
			continue
		}
		t := at[infos[i].Name]
		n := min(t.Size()/2, 16*t.Shape[len(t.Shape)-1])
		_, err = f.WriteAt(hashedBF16(hf[i].Name, n), int64(len(hdr))+int64(t.DataOffsets[0]))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hashedBF16 is n BF16 values in [-1, 1) drawn from name.
func hashedBF16(name string, n uint64) []byte {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	out := make([]byte, 2*n)
	for i := range n {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
		v := float32(int64(h>>11))/float32(1<<52) - 1
		binary.LittleEndian.PutUint16(out[2*i:], uint16(math.Float32bits(v)>>16))
	}
	return out
}

// copyRenamed copies a one-file checkpoint with its tensors renamed: the
// header rewritten, the data and config.json copied as they are.
func copyRenamed(from, to string, rename func(string) string) error {
	in, err := os.Open(filepath.Join(from, "model.safetensors"))
	if err != nil {
		return err
	}
	defer in.Close()
	var n uint64
	if err := binary.Read(in, binary.LittleEndian, &n); err != nil {
		return err
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(in, raw); err != nil {
		return err
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw, &header); err != nil {
		return err
	}
	renamed := make(map[string]json.RawMessage, len(header))
	for k, v := range header {
		if k != "__metadata__" {
			k = rename(k)
		}
		renamed[k] = v
	}
	out, err := json.Marshal(renamed)
	if err != nil {
		return err
	}
	for len(out)%8 != 0 {
		out = append(out, ' ')
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(to, "model.safetensors"))
	if err != nil {
		return err
	}
	err = binary.Write(f, binary.LittleEndian, uint64(len(out)))
	if err == nil {
		_, err = f.Write(out)
	}
	if err == nil {
		_, err = io.Copy(f, in)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	config, err := os.ReadFile(filepath.Join(from, "config.json"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(to, "config.json"), config, 0o644)
}
