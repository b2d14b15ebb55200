package verify

import (
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A PEFT LoRA adapter as huggingface/peft saves it (src/peft/utils/save_and_load.py,
// get_peft_model_state_dict, @ 003369494699fedd543fe38d16e52df96aeae743):
// base_model.model.<module>.lora_A.weight [r, in] and lora_B.weight
// [out, r] for each target, lora_magnitude_vector for DoRA, and
// base_model.model.<module>.weight for a modules_to_save copy (the
// ".modules_to_save.<adapter>" infix removed). A target's merge
// (tuners/lora/layer.py, Linear.get_delta_weight and merge) is
// W + scaling·B·A, scaling = lora_alpha/r, or lora_alpha/√r with
// use_rslora (LoraLayer.update_layer), per module from rank_pattern and
// alpha_pattern.

const peftPrefix = "base_model.model."

// peftDefaultAlpha is LoraConfig's lora_alpha when the config leaves it out.
const peftDefaultAlpha = 8

// A loraAdapter is an adapter checkpoint's LoRA modules and saved copies.
type loraAdapter struct {
	c       *checkpoint.Checkpoint
	cfg     checkpoint.PEFTConfig
	layout  loraLayout
	modules []*loraModule // by path
	saved   map[string]Source
	sources map[string]Source // every readable tensor, by name
}

// A loraModule is one target: its low-rank pair and its scale.
type loraModule struct {
	path      string // the module in the base (HF naming); its weight is path + ".weight"
	a, b, mag *Source
	// aShape and bShape are the pair as peft orients it, [r, in] and
	// [out, r], whatever the layout stores.
	aShape, bShape []uint64
	rank           uint64  // aShape's first dimension
	want           uint64  // the rank the config says, 0 when it does not
	alpha, scale   float64 // from the config and its patterns
	aVals, bVals   []float32
	magVals        []float32 // DoRA's magnitude, [out]
	fits           bool      // checkShapes found the pair fits its base weight
	embedding      bool      // peft's lora_embedding_A and _B, read as a Linear pair
}

// weight is the base weight the module adapts.
func (m *loraModule) weight() string { return m.path + ".weight" }

// readLoRA reads an adapter's tensor names and config; values are read by
// loadValues. An adapter folder holding two layouts (torchtune's
// adapter_model.pt beside its PEFT adapter_model.safetensors) is read as
// the first of PEFT, mlx-lm, torchtune it holds.
func readLoRA(c *checkpoint.Checkpoint) *loraAdapter {
	la := &loraAdapter{c: c, saved: map[string]Source{}, sources: map[string]Source{}}
	if c.PEFT != nil {
		la.cfg = *c.PEFT
	}
	srcs, _ := sources(c)
	var parts [3][]loraPart
	for _, s := range srcs {
		name := s.Tensor.Name
		if old, dup := la.sources[name]; dup && path.Base(old.Shard.Name) == mlxAdapterFile {
			continue // mlx-lm's periodic NNNNNNN_adapters.safetensors repeat the final file's names
		}
		la.sources[name] = s
		if p, ok := parseLoRAName(name); ok {
			parts[p.layout] = append(parts[p.layout], p)
		} else if rest, ok := strings.CutPrefix(name, peftPrefix); ok && !strings.Contains(rest, "lora_") {
			la.saved[rest] = s
		}
	}
	for l := range parts {
		if len(parts[l]) > 0 {
			la.layout = loraLayout(l)
			break
		}
	}
	if la.layout != layoutPEFT {
		la.saved = map[string]Source{} // modules_to_save copies are peft's
	}
	byPath := map[string]*loraModule{}
	for _, p := range parts[la.layout] {
		m := byPath[p.path]
		if m == nil {
			m = &loraModule{path: p.path}
			byPath[p.path] = m
			la.modules = append(la.modules, m)
		}
		s := la.sources[p.name]
		switch p.part {
		case 'A':
			m.a, m.aShape = &s, la.layout.peftShape(s.Tensor.Shape)
		case 'B':
			m.b, m.bShape = &s, la.layout.peftShape(s.Tensor.Shape)
		case 'a': // lora_embedding_A: lora_B's transpose (see embeddingPair)
			m.b, m.bShape, m.embedding = &s, transposedShape(s.Tensor.Shape), true
		case 'b':
			m.a, m.aShape, m.embedding = &s, transposedShape(s.Tensor.Shape), true
		default:
			m.mag = &s
		}
	}
	for _, m := range la.modules {
		la.scaleOf(m)
	}
	slices.SortFunc(la.modules, func(x, y *loraModule) int { return strings.Compare(x.path, y.path) })
	return la
}

// scaleOf sets a module's rank, the rank and alpha the config says, and
// its scale: peft's (and torchtune's, whose adapter_config.json is peft's)
// alpha/r or alpha/√r, per module from the patterns; mlx-lm's
// lora_parameters.scale as is.
func (la *loraAdapter) scaleOf(m *loraModule) {
	if len(m.aShape) == 2 {
		m.rank = m.aShape[0]
	}
	m.want, m.alpha = la.cfg.Rank, la.cfg.Alpha
	if la.layout == layoutMLX {
		m.scale = la.cfg.Scale
		if m.scale == 0 {
			m.scale = mlxDefaultScale
		}
		return
	}
	if m.alpha == 0 {
		m.alpha = peftDefaultAlpha
	}
	if r, ok := patternValue(la.cfg.RankPattern, m.path); ok {
		m.want = r
	}
	if a, ok := patternValue(la.cfg.AlphaPattern, m.path); ok {
		m.alpha = a
	}
	r := float64(m.rank)
	if m.want > 0 {
		r = float64(m.want)
	}
	m.scale = m.alpha / r
	if la.cfg.RSLoRA {
		m.scale = m.alpha / math.Sqrt(r)
	}
}

// patternValue finds a module's entry in rank_pattern or alpha_pattern the
// way peft's get_pattern_key does: a key matches a module name that it
// ends, after a dot, as a regular expression (re.match(rf"(.*\.)?({key})$")).
// A key that is not a Go regular expression matches as a plain suffix.
func patternValue[V any](patterns map[string]V, path string) (V, bool) {
	var zero V
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range patterns {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if re, err := regexp.Compile(`^(.*\.)?(` + k + `)$`); err == nil {
			if re.MatchString(path) {
				return patterns[k], true
			}
		} else if path == k || strings.HasSuffix(path, "."+k) {
			return patterns[k], true
		}
	}
	return zero, false
}

// floatReader decodes small adapter tensors to float32, exact for the
// BF16, F16 and F32 adapters are saved in (an F64 one rounds by 2^-24, which
// the merge proof's floor allows for the products anyway, and an F64
// value beyond float32's range counts as not finite); its buffers are
// reused, so reading an adapter holds its values once, not thrice.
type floatReader struct {
	raw []byte
	f64 []float64
}

// read decodes s: its bytes are in the file (the shard validated), and an
// adapter is r·(in+out) a target.
func (fr *floatReader) read(s *Source) ([]float32, error) {
	t := s.Tensor
	if !t.DType.IsFloat() || t.DType.Lanes() != 1 {
		return nil, fmt.Errorf("%s: tensor %q: dtype %s is not a float", s.Shard.Path, t.Name, t.DType)
	}
	n, _ := t.NumElements()
	size := t.DType.Bytes(n)
	if uint64(cap(fr.raw)) < size {
		fr.raw = make([]byte, size)
	}
	if uint64(cap(fr.f64)) < n {
		fr.f64 = make([]float64, n)
	}
	b, f := fr.raw[:size], fr.f64[:n]
	if _, err := io.ReadFull(t.Open(), b); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", s.Shard.Path, t.Name, err)
	}
	quant.DecodeFloat64(t.DType, b, f)
	out := make([]float32, n)
	for i, v := range f {
		out[i] = float32(v)
	}
	return out, nil
}

// loadValues reads every module's A and B, in peft's orientation (see
// loraLayout.toPEFT; base is the model the adapter is checked against).
func (la *loraAdapter) loadValues(base *checkpoint.Checkpoint) error {
	var fr floatReader
	for _, m := range la.modules {
		if m.a == nil || m.b == nil {
			continue
		}
		var err error
		if m.aVals, err = fr.read(m.a); err != nil {
			return err
		}
		if m.bVals, err = fr.read(m.b); err != nil {
			return err
		}
		if m.mag != nil {
			if m.magVals, err = fr.read(m.mag); err != nil {
				return err
			}
		}
		if len(m.aShape) == 2 && len(m.bShape) == 2 {
			if m.embedding {
				embeddingPair(m)
			} else {
				la.layout.toPEFT(m, base)
			}
		}
	}
	return nil
}

// CheckAdapter checks a PEFT LoRA adapter against the base model the
// command line names (never the config's base_model_name_or_path): every
// target exists in the base with shapes that fit it, ranks agree with the
// config, every target module the config lists has weights, and the
// adapter's values are finite and trained. It reads the adapter's values,
// never the base's.
func CheckAdapter(base, adapterC *checkpoint.Checkpoint) ([]Finding, error) {
	la := readLoRA(adapterC)
	if err := la.loadValues(base); err != nil {
		return nil, err
	}
	return la.check(base), nil
}

func (la *loraAdapter) check(base *checkpoint.Checkpoint) []Finding {
	return sortedByKey(append(la.checkShapes(base), la.checkValues()...))
}

func sortedByKey(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(x, y Finding) int { return strings.Compare(x.Key, y.Key) })
	return fs
}

// checkShapes is check's part that needs no values: names, shapes, ranks
// and the config's targets. It marks the modules that fit their base
// weight for checkValues.
func (la *loraAdapter) checkShapes(base *checkpoint.Checkpoint) []Finding {
	var out []Finding
	file := ""
	if la.c.PEFT != nil {
		file = la.c.PEFT.Path
	}
	for _, m := range la.modules {
		key := m.weight()
		w := base.Tensor(key)
		if m.a == nil || m.b == nil {
			half := "lora_B"
			if m.a == nil {
				half = "lora_A"
			}
			out = append(out, Finding{Code: CodeLoRAShapeMismatch, Severity: Error, Key: key,
				Message: fmt.Sprintf("the adapter holds no %s for %s: a low-rank pair needs both halves", half, m.path)})
			continue
		}
		if w == nil {
			out = append(out, Finding{Code: CodeLoRATargetMissing, Severity: Error, Key: key,
				Message: fmt.Sprintf("the adapter targets %s, which the base does not have (no %s)", m.path, key)})
			continue
		}
		as, bs := m.aShape, m.bShape
		if len(w.Shape) != 2 || len(as) != 2 || len(bs) != 2 || bs[1] != as[0] || as[1] != w.Shape[1] || bs[0] != w.Shape[0] {
			want := "lora_A [r, in], lora_B [out, r]"
			switch {
			case m.embedding:
				want = "lora_embedding_B [dim, r], lora_embedding_A [r, num_embeddings]"
			case la.layout == layoutMLX:
				want = "lora_a [in, r], lora_b [r, out]"
			}
			out = append(out, Finding{Code: CodeLoRAShapeMismatch, Severity: Error, Key: key,
				Message: fmt.Sprintf("the %s pair %s and %s does not fit the base weight %s (want %s)", la.layout,
					safetensors.FormatShape(m.a.Tensor.Shape), safetensors.FormatShape(m.b.Tensor.Shape), safetensors.FormatShape(w.Shape), want),
				Published: safetensors.FormatShape(w.Shape)})
			continue
		}
		if m.mag != nil && !m.embedding && (len(m.mag.Tensor.Shape) != 1 || m.mag.Tensor.Shape[0] != w.Shape[0]) {
			out = append(out, Finding{Code: CodeLoRAShapeMismatch, Severity: Error, Key: key,
				Message: fmt.Sprintf("the DoRA magnitude %s does not fit the base weight %s (want [out])",
					safetensors.FormatShape(m.mag.Tensor.Shape), safetensors.FormatShape(w.Shape)),
				Published: safetensors.FormatShape(w.Shape)})
			continue
		}
		if m.want > 0 && m.rank != m.want {
			out = append(out, Finding{Code: CodeLoRARankMismatch, Severity: Error, Key: key, File: file,
				Message:  fmt.Sprintf("rank %d, but the config says %d (r or rank_pattern)", m.rank, m.want),
				Expected: m.want, Got: m.rank})
		}
		m.fits = true
	}
	for name, s := range la.saved {
		if w := base.Tensor(name); w == nil {
			out = append(out, Finding{Code: CodeLoRATargetMissing, Severity: Error, Key: name,
				Message: fmt.Sprintf("the adapter saves a copy of %s (modules_to_save), which the base does not have", name)})
		} else if !slices.Equal(w.Shape, s.Tensor.Shape) {
			out = append(out, Finding{Code: CodeLoRAShapeMismatch, Severity: Error, Key: name,
				Message: fmt.Sprintf("the modules_to_save copy is %s, the base's %s", safetensors.FormatShape(s.Tensor.Shape), safetensors.FormatShape(w.Shape))})
		}
	}
	for _, t := range la.cfg.TargetModules {
		if !slices.ContainsFunc(la.modules, func(m *loraModule) bool { return m.path == t || strings.HasSuffix(m.path, "."+t) }) {
			out = append(out, Finding{Code: CodeLoRATargetEmpty, Severity: Warning, File: file,
				Message: fmt.Sprintf("target_modules lists %s, but the adapter holds no weights for it", textfmt.Quote(t))})
		}
	}
	return out
}

// checkValues is check's part that needs loadValues: non-finite and
// untrained pairs of the modules that fit.
func (la *loraAdapter) checkValues() []Finding {
	var out []Finding
	for _, m := range la.modules {
		if !m.fits {
			continue
		}
		key := m.weight()
		if n := nonFinite(m.aVals) + nonFinite(m.bVals) + nonFinite(m.magVals); n > 0 {
			what := "lora_A and lora_B"
			if m.mag != nil {
				what = "lora_A, lora_B and lora_magnitude_vector"
			}
			out = append(out, Finding{Code: CodeNonFinite, Severity: Error, Side: SideAdapter, Key: key,
				Message: fmt.Sprintf("%s NaN or Inf values in the adapter's %s", textfmt.Thousands(uint64(n)), what)})
		}
		if allZero(m.bVals) {
			out = append(out, Finding{Code: CodeLoRAUntrained, Severity: Warning, Key: key,
				Message: "lora_B is all zero, as peft initializes it: the adapter's delta is zero (it never trained)"})
		}
	}
	return out
}

func nonFinite(v []float32) int {
	n := 0
	for _, x := range v {
		if x-x != 0 {
			n++
		}
	}
	return n
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
