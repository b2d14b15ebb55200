package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The structure of a quantized checkpoint, from its headers and
// quantization_config alone: every quantized weight has the companions its
// scheme needs, of the sizes its codec says, no companion is left without
// a weight, and the config agrees with what is quantized. Companions are
// looked up over every shard's tensors, so one the index places in another
// shard is found. Findings are keyed by the weight's name.

// quantStructure checks c's quantized weights (none when c is not
// quantized).
func quantStructure(c *checkpoint.Checkpoint) []Finding {
	qb, ok := bindCheckpoint(c)
	if !ok {
		return nil
	}
	if qb.err != nil {
		return []Finding{{Code: CodeQuantizedConfig, Severity: Warning, Message: fmt.Sprintf("%s: %v; its weights were not bound", qb.method, qb.err)}}
	}
	file := ""
	if c.Config != nil {
		file = c.Config.Path
	}
	out := checkBound(qb.scheme, quantConfigOf(qb.config), qb.bound, qb.infos, file)
	for _, b := range qb.bound.Bindings {
		if why, ok := qb.unresolved[b.Weight]; ok {
			out = append(out, Finding{Code: CodeQuantizedScaleShape, Severity: Error, Key: b.Weight,
				Message: fmt.Sprintf("%s: its layout tensor %s (the shape and encoding it is stored in) cannot be used: %s", b.Codec, textfmt.Quote(metaName(b)), why)})
		}
	}
	return out
}

// metaName is the name of a Resolver binding's meta part.
func metaName(b quant.Binding) string {
	if r, ok := b.Codec.(quant.Resolver); ok && r.MetaPart() < len(b.Parts) {
		return b.Parts[r.MetaPart()]
	}
	return ""
}

// A checkpointBinding is what a scheme bound over every shard's tensors.
type checkpointBinding struct {
	method, scheme string
	config         json.RawMessage
	bound          quant.Bound
	infos          []tensorfile.TensorInfo
	err            error
	// unresolved says, by weight, why the layout tensor of a weight whose
	// shape is in the data (see resolveBindings) was not read.
	unresolved map[string]string
}

// bindCheckpoint binds c's quantized weights, from its headers and config;
// ok is false when c is not quantized or no scheme binds it.
func bindCheckpoint(c *checkpoint.Checkpoint) (checkpointBinding, bool) {
	if !quantEvidence(c) {
		return checkpointBinding{}, false // the common case: no sources built, nothing bound
	}
	srcs, _ := sources(c)
	physical := make([]safetensors.TensorInfo, len(srcs))
	for i, s := range srcs {
		physical[i] = s.Tensor.TensorInfo
	}
	q := quantOf(&Mapped{Checkpoint: c}, physical)
	if q.method == "" {
		return checkpointBinding{}, false
	}
	infos := make([]tensorfile.TensorInfo, len(physical))
	for i, t := range physical {
		infos[i] = tensorfile.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	scheme := q.scheme
	if scheme == nil {
		scheme = bestScheme(q.config, infos)
	}
	if scheme == nil {
		return checkpointBinding{}, false
	}
	b, err := scheme.Bind(q.config, infos)
	var unresolved map[string]string
	if err == nil {
		unresolved = resolveBindings(b.Bindings, srcs)
	}
	return checkpointBinding{method: q.method, scheme: scheme.Name(), config: q.config, bound: b, infos: infos, err: err, unresolved: unresolved}, true
}

// bestScheme is the scheme that binds the most weights on the names and
// shapes alone, those it decodes first (two schemes that name companions
// alike, compressed-tensors' and ModelOpt's weight_scale, tell apart by
// the dtypes), or nil when none binds one.
func bestScheme(config []byte, infos []tensorfile.TensorInfo) quant.Scheme {
	var best quant.Scheme
	most := [2]int{}
	for _, s := range quant.Schemes() {
		b, err := s.Bind(config, infos)
		if err != nil || len(b.Bindings) == 0 {
			continue
		}
		n := [2]int{0, len(b.Bindings)}
		for _, bind := range b.Bindings {
			if _, ok := bind.Codec.(*quant.Unsupported); !ok {
				n[0]++
			}
		}
		if n[0] > most[0] || n[0] == most[0] && n[1] > most[1] {
			best, most = s, n
		}
	}
	return best
}

// quantConfig is what the structural checks read of a
// quantization_config (or mlx-lm's "quantization").
type quantConfig struct {
	// ignore lists modules left unquantized: compressed-tensors' ignore
	// (names, or "re:" patterns), transformers' modules_to_not_convert
	// and llm_int8_skip_modules (substrings of names).
	ignore     []string
	notConvert []string
	// blockSize is fp8's weight_block_size, [rows, cols]; nil when absent.
	blockSize []uint64
	// asymmetric is set when the config says zero points are stored.
	asymmetric bool
	// zeroPointsAlways: the scheme stores zero points whatever the config
	// (GPTQ's qzeros, AWQ's, MLX's biases).
	zeroPointsAlways bool
}

func quantConfigOf(raw json.RawMessage) quantConfig {
	var c struct {
		Method     string   `json:"quant_method"`
		Ignore     []string `json:"ignore"`
		NotConvert []string `json:"modules_to_not_convert"`
		// bitsandbytes' (transformers BitsAndBytesConfig), read as
		// modules_to_not_convert.
		SkipModules []string `json:"llm_int8_skip_modules"`
		// ModelOpt's (its globs, read as modules_to_not_convert).
		Exclude   []string `json:"exclude_modules"`
		Block     []uint64 `json:"weight_block_size"`
		Sym       *bool    `json:"sym"`
		ZeroPoint *bool    `json:"zero_point"`
		Mode      string   `json:"mode"`
		Groups    map[string]struct {
			Weights *struct {
				Symmetric *bool `json:"symmetric"`
			} `json:"weights"`
		} `json:"config_groups"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return quantConfig{}
	}
	q := quantConfig{ignore: c.Ignore, notConvert: slices.Concat(c.NotConvert, c.SkipModules, c.Exclude)}
	if len(c.Block) == 2 && c.Block[0] > 0 && c.Block[1] > 0 {
		q.blockSize = c.Block
	}
	for _, g := range c.Groups {
		if g.Weights != nil && g.Weights.Symmetric != nil && !*g.Weights.Symmetric {
			q.asymmetric = true
		}
	}
	switch c.Method {
	case "gptq", "awq":
		q.zeroPointsAlways = true
	case "":
		q.zeroPointsAlways = c.Mode == "" || c.Mode == "affine" // mlx-lm's affine mode stores biases
	}
	if (c.Sym != nil && !*c.Sym) || (c.ZeroPoint != nil && *c.ZeroPoint) {
		q.asymmetric = true
	}
	return q
}

// ignored reports a module the config leaves unquantized, and the rule.
func (q quantConfig) ignored(module string) (string, bool) {
	for _, p := range q.ignore {
		if pat, ok := strings.CutPrefix(p, "re:"); ok {
			// compressed-tensors matches with re.match: anchored at the start.
			if re, err := regexp.Compile(`^(?:` + pat + `)`); err == nil && re.MatchString(module) {
				return "ignore " + textfmt.Quote(p), true
			}
			continue
		}
		if module == p || strings.HasSuffix(module, "."+p) {
			return "ignore " + textfmt.Quote(p), true
		}
	}
	for _, p := range q.notConvert {
		if p == "" {
			continue
		}
		// transformers: any(key in name …); gpt-oss writes globs
		// ("model.layers.*.self_attn").
		hit := strings.Contains(module, p)
		if strings.Contains(p, "*") {
			pat := strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, `[^.]*`)
			re, err := regexp.Compile(`(^|\.)` + pat + `($|\.)`)
			hit = err == nil && re.MatchString(module)
		}
		if hit {
			return "modules_to_not_convert " + textfmt.Quote(p), true
		}
	}
	return "", false
}

// checkBound judges what a scheme bound over a checkpoint's tensors.
func checkBound(scheme string, cfg quantConfig, b quant.Bound, infos []tensorfile.TensorInfo, cfgFile string) []Finding {
	byName := make(map[string]*tensorfile.TensorInfo, len(infos))
	for i := range infos {
		if _, dup := byName[infos[i].Name]; !dup {
			byName[infos[i].Name] = &infos[i]
		}
	}
	var out []Finding
	claimed := map[string]bool{}
	for _, bind := range b.Bindings {
		for _, p := range bind.Parts {
			claimed[p] = true
		}
		out = append(out, checkBinding(scheme, cfg, bind, byName, cfgFile)...)
	}
	for _, name := range b.Unused {
		out = append(out, Finding{Code: CodeQuantizedScaleUnused, Severity: Warning, Key: name,
			Message: fmt.Sprintf("a %s companion with no quantized weight beside it: left over from a re-save or a renamed weight", scheme)})
	}
	if len(b.Bindings) == 0 {
		return out
	}
	// Weights stored as quantized data with no companion at all: a scheme
	// whose data suffix is shared with plain tensors (".weight") does not
	// bind them.
	for _, t := range infos {
		if claimed[t.Name] || !strings.HasSuffix(t.Name, ".weight") {
			continue
		}
		module := strings.TrimSuffix(t.Name, ".weight")
		switch {
		case quantStorage(t.DType):
			out = append(out, Finding{Code: CodeQuantizedScaleMissing, Severity: Error, Key: t.Name,
				Message: fmt.Sprintf("stored as %s with no scale beside it (%s): it cannot be dequantized", t.DType, scheme)})
		case t.DType.IsFloat() && len(t.Shape) == 2 && linearModule(module):
			if _, ok := cfg.ignored(module); !ok {
				out = append(out, Finding{Code: CodeQuantizedConfig, Severity: Warning, Key: t.Name, File: cfgFile,
					Message: fmt.Sprintf("a Linear weight left %s though no rule of the quantization_config excludes it (%s quantizes its other Linear weights)", t.DType, scheme)})
			}
		}
	}
	return out
}

// checkBinding judges one quantized weight: its required parts, their
// sizes, the config's rules about it.
func checkBinding(scheme string, cfg quantConfig, bind quant.Binding, byName map[string]*tensorfile.TensorInfo, cfgFile string) []Finding {
	var out []Finding
	key := bind.Weight
	if rule, ok := cfg.ignored(strings.TrimSuffix(key, ".weight")); ok {
		out = append(out, Finding{Code: CodeQuantizedConfig, Severity: Warning, Key: key, File: cfgFile,
			Message: fmt.Sprintf("quantized (%s) though the quantization_config's %s leaves it unquantized", bind.Codec, rule)})
	}
	parts := bind.Codec.Parts()
	_, unsupported := bind.Codec.(*quant.Unsupported)
	seen := map[quant.Role]bool{}
	var missing []string
	for i, p := range parts {
		first := !seen[p.Role]
		seen[p.Role] = true
		if i >= len(bind.Parts) || bind.Parts[i] != "" {
			continue
		}
		if requiredPart(p.Role, first, unsupported, cfg) {
			missing = append(missing, p.Role.String())
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s without its %s: it cannot be dequantized", bind.Codec, strings.Join(missing, " and "))
		if slices.Equal(missing, []string{quant.ZeroPoint.String()}) {
			msg = fmt.Sprintf("%s: the scheme is asymmetric but its zero points are missing", bind.Codec)
		}
		return append(out, Finding{Code: CodeQuantizedScaleMissing, Severity: Error, Key: key, Message: msg})
	}
	if f, ok := blockSizeCheck(scheme, cfg, bind, byName, cfgFile); ok {
		return append(out, f)
	}
	if f, ok := partSizes(bind, byName); ok {
		out = append(out, f)
	}
	return out
}

// requiredPart says whether a codec needs a part: a decoding codec lists
// only what it reads, but the activation scales and group indices are
// loaded beside it, not decoded from; an Unsupported codec lists every
// part its layout may have, of which the first scale (and zero point, when
// asymmetric) are needed.
func requiredPart(r quant.Role, first, unsupported bool, cfg quantConfig) bool {
	switch r {
	case quant.InputScale, quant.Index:
		return false
	case quant.Scale:
		return first
	case quant.ZeroPoint:
		return cfg.asymmetric || cfg.zeroPointsAlways || (!unsupported && first)
	}
	return !unsupported && first
}

// partSizes compares each part's bytes with what the codec's Sizes says a
// weight of the binding's shape needs. Codecs that do not decode yet, and
// weights whose shape the headers do not say, are not judged.
func partSizes(bind quant.Binding, byName map[string]*tensorfile.TensorInfo) (Finding, bool) {
	if bind.Shape == nil {
		return Finding{}, false
	}
	d, matrices, ok := codecDims(bind.Shape)
	if !ok {
		return Finding{}, false
	}
	if storedTransposed(bind.Codec, bind.Shape) {
		d.Rows, d.Cols = d.Cols, d.Rows
	}
	parts := bind.Codec.Parts()
	sizes := make([]uint64, len(parts))
	if err := bind.Codec.Sizes(d, sizes); err != nil {
		if errors.Is(err, quant.ErrUnsupported) {
			return Finding{}, false
		}
		return Finding{Code: CodeQuantizedScaleShape, Severity: Error, Key: bind.Weight,
			Message: fmt.Sprintf("%s: logical shape %s: %v", bind.Codec, safetensors.FormatShape(bind.Shape), err)}, true
	}
	for i, name := range bind.Parts {
		t := byName[name]
		if name == "" || t == nil || i >= len(sizes) {
			continue
		}
		hi, want := bits.Mul64(sizes[i], matrices)
		have := t.DType.Bytes(numElements(t.Shape))
		if hi == 0 && have == want {
			continue
		}
		return Finding{Code: CodeQuantizedScaleShape, Severity: Error, Key: bind.Weight,
			Message: fmt.Sprintf("%s %s %s %s holds %s, a weight of %s in %s needs %s",
				parts[i].Role, textfmt.Quote(name), t.DType, safetensors.FormatShape(t.Shape), textfmt.Plural(int(min(have, 1<<62)), "byte"),
				safetensors.FormatShape(bind.Shape), bind.Codec, textfmt.Plural(int(min(want, 1<<62)), "byte")),
			Expected: want, Got: have}, true
	}
	return Finding{}, false
}

// storedTransposed reports a codec whose stored matrices are the transpose
// of the logical weight's, of shape shape: gpt-oss's MXFP4 experts hold
// [E, rows, G·32] blocks that transformers dequantizes to [E, G·32, rows]
// (quant.MXFP4's doc: it swaps dimensions 1 and 2, a stack's last two; a
// 2-D weight keeps the stored order).
func storedTransposed(c quant.Codec, shape []uint64) bool {
	switch c.(type) {
	case quant.MXFP4, *quant.MXFP4:
		return len(shape) == 3
	}
	return false
}

func numElements(shape []uint64) uint64 {
	n, _ := tensorfile.NumElements(shape)
	return n
}

// codecDims is how a codec sees a logical shape (as the value engine does:
// matrices of its last two dimensions; a 1-D tensor is one row).
func codecDims(shape []uint64) (d quant.Dims, matrices uint64, ok bool) {
	if _, ok := tensorfile.NumElements(shape); !ok {
		return d, 0, false
	}
	switch len(shape) {
	case 0:
		return quant.Dims{Rows: 1, Cols: 1}, 1, true
	case 1:
		return quant.Dims{Rows: 1, Cols: shape[0]}, 1, true
	}
	matrices = 1
	for _, n := range shape[:len(shape)-2] {
		matrices *= n // NumElements bounded the product
	}
	return quant.Dims{Rows: shape[len(shape)-2], Cols: shape[len(shape)-1]}, matrices, true
}

// blockSizeCheck judges fp8's block scales [⌈out/b0⌉, ⌈in/b1⌉] against
// weight_block_size: scales that fit another block size contradict the
// config; scales that fit none (a partial last block row dropped) are
// misshapen.
func blockSizeCheck(scheme string, cfg quantConfig, bind quant.Binding, byName map[string]*tensorfile.TensorInfo, cfgFile string) (Finding, bool) {
	if scheme != "fp8" || len(bind.Shape) != 2 {
		return Finding{}, false
	}
	i := slices.IndexFunc(bind.Codec.Parts(), func(p quant.Part) bool { return p.Role == quant.Scale })
	if i < 0 || i >= len(bind.Parts) || byName[bind.Parts[i]] == nil {
		return Finding{}, false
	}
	s := byName[bind.Parts[i]].Shape
	if len(s) != 2 {
		return Finding{Code: CodeQuantizedScaleShape, Severity: Error, Key: bind.Weight,
			Message: fmt.Sprintf("block scales %s are not a matrix of blocks of the weight %s", safetensors.FormatShape(s), safetensors.FormatShape(bind.Shape))}, true
	}
	fits := func(b0, b1 uint64) bool {
		return ceilDiv(bind.Shape[0], b0) == s[0] && ceilDiv(bind.Shape[1], b1) == s[1]
	}
	block := cfg.blockSize
	if block == nil {
		block = []uint64{128, 128} // transformers' default weight_block_size
	}
	if fits(block[0], block[1]) {
		return Finding{}, false
	}
	want := []uint64{ceilDiv(bind.Shape[0], block[0]), ceilDiv(bind.Shape[1], block[1])}
	// Scales of the config's blocks rounded down (the partial last row or
	// column lost) are misshapen, whatever other block size they fit.
	dropped := (s[0] == bind.Shape[0]/block[0] || s[0] == want[0]) && (s[1] == bind.Shape[1]/block[1] || s[1] == want[1])
	for _, b := range []uint64{16, 32, 64, 128, 256, 512} {
		if fits(b, b) && cfg.blockSize != nil && !dropped {
			return Finding{Code: CodeQuantizedConfig, Severity: Warning, Key: bind.Weight, File: cfgFile,
				Message:  fmt.Sprintf("weight_block_size is %d×%d, but its scales %s are blocks of %d×%d", block[0], block[1], safetensors.FormatShape(s), b, b),
				Expected: block, Got: []uint64{b, b}}, true
		}
	}
	return Finding{Code: CodeQuantizedScaleShape, Severity: Error, Key: bind.Weight,
		Message: fmt.Sprintf("block scales %s %s, a weight of %s in blocks of %d×%d needs %s (a partial last block row or column dropped?)",
			textfmt.Quote(bind.Parts[i]), safetensors.FormatShape(s), safetensors.FormatShape(bind.Shape), block[0], block[1], safetensors.FormatShape(want)),
		Expected: want, Got: s}, true
}

func ceilDiv(n, d uint64) uint64 {
	if d == 0 {
		return 0
	}
	return n/d + min(n%d, 1)
}

// quantStorage reports the dtypes a plain weight is never stored in: the
// 8-bit and smaller floats, and integers (packed or quantized values).
func quantStorage(d safetensors.DType) bool {
	return lowBit(d) || (!d.IsFloat() && d != safetensors.BOOL && d.Bits() > 0)
}

// linearModule reports a module named as the Linear projections of a
// transformer layer are: one in a numbered layer, whose last name is a
// projection's (q_proj, down_proj, fc1, …). Routers, norms and embeddings
// are not.
func linearModule(module string) bool {
	leaf := module[strings.LastIndexByte(module, '.')+1:]
	if !strings.HasSuffix(leaf, "_proj") && !slices.Contains(linearLeaves, leaf) {
		return false
	}
	_, ok := layerIndex(module + ".weight")
	return ok
}

var linearLeaves = []string{"fc1", "fc2", "w1", "w2", "w3", "dense", "c_attn", "c_proj", "c_fc",
	"query_key_value", "dense_h_to_4h", "dense_4h_to_h", "wq", "wk", "wv", "wo", "qkv"}

// quantEvidence is quantOf's test, read straight off the config and the
// headers: a quantization_config (or mlx-lm's "quantization"), or a tensor
// of a sub-byte or 8-bit float dtype. Validate and inspect ask it for every
// checkpoint, so an unquantized one costs a scan of dtypes and nothing more.
func quantEvidence(c *checkpoint.Checkpoint) bool {
	if cfg := parsedConfig(c); cfg != nil {
		if raw, ok := cfg.Fields["quantization"]; cfg.Quantized || ok && string(raw) != "null" {
			return true
		}
	}
	for _, s := range c.Shards {
		if h := s.Safetensors(); h != nil {
			for _, t := range h.Tensors {
				if lowBit(t.DType) {
					return true
				}
			}
		} else if s.Header != nil {
			for _, t := range tensorfile.Tensors(s.Header) {
				if lowBit(t.DType) {
					return true
				}
			}
		}
	}
	return false
}
