package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

// Validate checks a checkpoint: every shard against the format (the
// reference implementation's errors plus duplicate_key and unaligned_data),
// the index against the shards, and config.json against the tensors. It
// returns ctx's error, and no findings, when ctx is done first.
func Validate(ctx context.Context, c *checkpoint.Checkpoint) ([]Finding, error) {
	scans := make([]shardScan, len(c.Shards))
	var wg sync.WaitGroup
	for i, s := range c.Shards {
		wg.Go(func() { scans[i] = scanShard(ctx, c, s) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Finding
	for _, sc := range scans {
		out = append(out, sc.findings...)
	}
	out = append(out, validateIndex(c, scans)...)
	if !ggufWeights(c) {
		out = append(out, validateConfig(c, scans)...)
	}
	out = append(out, quantStructure(c)...)
	out = append(out, ggufSplits(c)...)
	if c.NumTensors() == 0 && !slices.ContainsFunc(out, func(f Finding) bool { return f.Severity == Error }) {
		out = append(out, Finding{Code: CodeEmptyCheckpoint, Severity: Warning, File: c.Path, Message: "the checkpoint holds no tensors"})
	}
	if c.PartOf != nil {
		out = append(out, Finding{Code: CodeShardOfIndex, Severity: Info, File: c.PartOf.Path,
			Message: fmt.Sprintf("this file is one shard of %d that the index names; validate the directory to check them all", len(c.PartOf.ShardNames()))})
	}
	if len(c.Variants) > 0 {
		v := c.Variant
		if v == "" {
			v = "the plain model.safetensors"
		}
		out = append(out, Finding{Code: CodeVariants, Severity: Info, File: c.Source.Path("."),
			Message: fmt.Sprintf("the directory also holds variant(s) %s; %s was checked here, each variant is its own checkpoint", strings.Join(checkpoint.VariantNames(c.Variants), ", "), v)})
	}
	if len(c.Superseded) > 0 {
		out = append(out, Finding{Code: CodeSupersededWeights, Severity: Info, File: c.Source.Path("."),
			Message: fmt.Sprintf("the directory also holds %s; as transformers does, the safetensors weights were checked and these not read (name one as the path to check it)", strings.Join(c.Superseded, ", "))})
	}
	return out, nil
}

// A shardScan is what one pass over a shard's tensors learns; shards are
// scanned in parallel, since an MoE checkpoint has tens of thousands.
type shardScan struct {
	findings []Finding
	bytes    uint64 // data bytes of its tensors
	matched  int    // tensors the index maps to this shard
	strays   int    // tensors the index does not map here
	layers   map[uint64]bool
	params   [32]uint64 // floating-point parameters by dtype
}

func scanShard(ctx context.Context, c *checkpoint.Checkpoint, s *checkpoint.Shard) shardScan {
	sc := shardScan{findings: shardFindings(c, s), layers: make(map[uint64]bool)}
	idx := c.Index
	indexed := idx != nil && c.IndexErr == nil
	last := ^uint64(0)
	for i, t := range headerTensors(s) {
		if i%4096 == 0 && ctx.Err() != nil {
			return sc
		}
		sc.bytes += t.Size()
		if l, ok := layerIndex(t.Name); ok && l != last {
			sc.layers[l], last = true, l
		}
		if n, ok := t.NumElements(); ok && t.DType.IsFloat() {
			sc.params[t.DType] += n
		}
		if !indexed {
			continue
		}
		want, ok := idx.ShardOf(t.Name)
		if ok && want == s.Name {
			sc.matched++
			continue
		}
		sc.strays++
		msg := "tensor is in this shard but not in the index's weight_map"
		if ok {
			msg = "tensor is in this shard but the index maps it to " + want
		}
		sc.findings = append(sc.findings, Finding{Code: CodeShardKeyNotInIndex, Severity: Error, File: s.Path, Key: t.Name, Message: msg})
	}
	return sc
}

// shardFindings turns what checkpoint found about a shard into findings.
func shardFindings(c *checkpoint.Checkpoint, s *checkpoint.Shard) []Finding {
	var out []Finding
	switch {
	case s.Status == checkpoint.ShardUnsafe:
		return []Finding{{Code: CodeIndexUnsafePath, Severity: Error, File: s.Path,
			Message: fmt.Sprintf("the index names shard %q, which %s; it was not opened", s.Name, s.Reason)}}
	case s.Status.Absent() && c.Index != nil && c.IndexErr == nil:
		return []Finding{{Code: CodeIndexMissingShard, Severity: Error, File: s.Path, Message: s.Reason}}
	case s.Status.Absent():
		return []Finding{{Code: CodeShardMissing, Severity: Error, File: s.Path, Message: s.Reason}}
	}
	var fe *safetensors.FormatError
	var te *torchsave.FormatError
	if errors.As(s.Err, &fe) {
		out = append(out, Finding{Code: FormatCode(fe.Kind), Severity: Error, File: s.Path, Key: fe.Tensor, Message: formatMessage(fe)})
	} else if g, ok := ggufFinding(s); ok {
		out = append(out, g)
	} else if s.Header != nil || errors.As(s.Err, &te) {
		out = append(out, torchFindings(s)...)
	} else if s.Err != nil {
		out = append(out, Finding{Code: CodeShardUnreadable, Severity: Error, File: s.Path, Message: s.Err.Error()})
	}
	f := s.Safetensors()
	if f == nil {
		return append(out, ggufMetadata(s)...)
	}
	for _, name := range f.Duplicates {
		out = append(out, Finding{Code: CodeDuplicateKey, Severity: Warning, File: s.Path, Key: name,
			Message: "tensor name appears more than once in the header; the last entry is used"})
	}
	if f.HeaderSize%8 != 0 {
		out = append(out, Finding{Code: CodeUnalignedData, Severity: Warning, File: s.Path,
			Message: fmt.Sprintf("header length %d is not a multiple of 8, so tensor data is not 8-byte aligned", f.HeaderSize)})
	}
	for _, t := range f.Tensors {
		elem := uint64(t.DType.Bits() / 8)
		if elem > 1 && t.Size() > 0 && t.DataOffsets[0]%elem != 0 {
			out = append(out, Finding{Code: CodeUnalignedData, Severity: Warning, File: s.Path, Key: t.Name,
				Message: fmt.Sprintf("%s data starts at offset %d, not a multiple of its %d-byte element size", t.DType, t.DataOffsets[0], elem)})
		}
	}
	return out
}

// formatMessage is the FormatError without the kind, which is the code.
func formatMessage(fe *safetensors.FormatError) string {
	msg := fe.Msg
	if fe.Offset >= 0 {
		msg += fmt.Sprintf(" (at byte %d)", fe.Offset)
	}
	return msg
}

func validateIndex(c *checkpoint.Checkpoint, scans []shardScan) []Finding {
	idx := c.Index
	if idx != nil && c.IndexErr != nil {
		return append([]Finding{{Code: CodeIndexInvalid, Severity: Error, File: idx.Path,
			Message: c.IndexErr.Error() + "; checked the *.safetensors files in its folder instead"}}, duplicatesAcrossShards(c.Shards)...)
	}
	if idx == nil {
		return duplicatesAcrossShards(c.Shards)
	}
	var out []Finding
	byName := make(map[string]*checkpoint.Shard, len(c.Shards))
	for _, s := range c.Shards {
		byName[s.Name] = s
	}
	// Every index entry for a shard is in its header exactly when the
	// header matched as many tensors as the index names there; only the
	// other shards need a lookup per entry.
	perShard := make(map[string]int, len(c.Shards))
	for _, f := range idx.WeightMap {
		perShard[f]++
	}
	short := make(map[string]bool)
	var total uint64
	strays := false
	for i, s := range c.Shards {
		total += scans[i].bytes
		strays = strays || scans[i].strays > 0
		if s.Header != nil && scans[i].matched != perShard[s.Name] {
			short[s.Name] = true
		}
	}
	var notInShard []string
	if len(short) > 0 {
		for key, f := range idx.WeightMap {
			if short[f] && !hasTensor(byName[f], key) {
				notInShard = append(notInShard, key)
			}
		}
	}
	slices.Sort(notInShard)
	for _, key := range notInShard {
		f, _ := idx.ShardOf(key)
		s := byName[f]
		out = append(out, Finding{Code: CodeIndexKeyNotInShard, Severity: Error, File: s.Path, Key: key,
			Message: fmt.Sprintf("index maps the tensor to %s, whose header does not have it", s.Name)})
	}
	// A tensor stored twice is a stray in at least one shard, since the
	// index maps a name to one shard only.
	if strays {
		out = append(out, duplicatesAcrossShards(c.Shards)...)
	}
	allOpened := !slices.ContainsFunc(c.Shards, func(s *checkpoint.Shard) bool { return s.Header == nil })
	if idx.TotalSize != nil && allOpened && *idx.TotalSize != total {
		out = append(out, Finding{Code: CodeIndexTotalSizeMismatch, Severity: Warning, File: idx.Path,
			Message:  fmt.Sprintf("metadata.total_size is %s but the shards' tensors hold %s bytes", textfmt.Thousands(*idx.TotalSize), textfmt.Thousands(total)),
			Expected: total, Got: *idx.TotalSize})
	}
	out = append(out, unreferencedFindings(c)...)
	if c.Remote != nil && !c.Remote.Listed {
		out = append(out, Finding{Code: CodeNotListable, Severity: Info, File: idx.Path,
			Message: "over " + c.Remote.Kind + " there is no listing: .safetensors files beside the index that it does not name (unreferenced_shard) were not looked for"})
	}
	return out
}

// hasTensor reports whether a shard's header has the tensor.
func hasTensor(s *checkpoint.Shard, name string) bool {
	if h := s.Safetensors(); h != nil {
		return h.Tensor(name) != nil
	}
	for _, t := range headerTensors(s) {
		if t.Name == name {
			return true
		}
	}
	return false
}

// maxUnreferencedListed is how many unreferenced files are reported one by
// one; the rest are counted in one finding, so that a folder of 100,000
// stray files beside an index makes a readable report.
const maxUnreferencedListed = 20

// unreferencedFindings reports the tensor files beside the index that it
// does not name: the first maxUnreferencedListed by name, then how many more.
func unreferencedFindings(c *checkpoint.Checkpoint) []Finding {
	listed := c.Unreferenced[:min(len(c.Unreferenced), maxUnreferencedListed)]
	out := make([]Finding, 0, len(listed)+1)
	for _, name := range listed {
		out = append(out, Finding{Code: CodeUnreferencedShard, Severity: Warning, File: c.Source.Path(name),
			Message: "a tensor file beside the index that the index does not name; it was not checked"})
	}
	if more := len(c.Unreferenced) - len(listed); more > 0 {
		out = append(out, Finding{Code: CodeUnreferencedShard, Severity: Warning, File: c.Source.Path("."),
			Message: fmt.Sprintf("and %s more tensor files beside the index that it does not name (%s in all); they were not checked",
				textfmt.Thousands(more), textfmt.Thousands(len(c.Unreferenced))),
			Got: len(c.Unreferenced)})
	}
	return out
}

// duplicatesAcrossShards reports tensor names stored in more than one shard.
func duplicatesAcrossShards(shards []*checkpoint.Shard) []Finding {
	if len(shards) < 2 {
		return nil
	}
	holder := make(map[string]string)
	repeated := make(map[string][]string)
	for _, s := range shards {
		for _, t := range headerTensors(s) {
			first, ok := holder[t.Name]
			if !ok {
				holder[t.Name] = s.Name
				continue
			}
			if repeated[t.Name] == nil {
				repeated[t.Name] = []string{first}
			}
			repeated[t.Name] = append(repeated[t.Name], s.Name)
		}
	}
	var out []Finding
	for _, key := range slices.Sorted(maps.Keys(repeated)) {
		out = append(out, Finding{Code: CodeDuplicateKeyAcrossShards, Severity: Error, Key: key,
			Message: "tensor is stored in " + strings.Join(repeated[key], ", ")})
	}
	return out
}

// layerIndex returns the block index in a name such as
// "model.layers.12.mlp.up_proj.weight" (also "h.", "blocks.", "layer.").
func layerIndex(name string) (uint64, bool) {
	for rest := name; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return 0, false
		}
		seg := rest[:i]
		rest = rest[i+1:]
		if seg != "layers" && seg != "h" && seg != "blocks" && seg != "layer" {
			continue
		}
		j := strings.IndexByte(rest, '.')
		if j <= 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(rest[:j], 10, 32)
		return n, err == nil
	}
}

func validateConfig(c *checkpoint.Checkpoint, scans []shardScan) []Finding {
	cfg := c.Config
	if cfg == nil {
		return nil
	}
	if c.ConfigErr != nil {
		return []Finding{{Code: CodeConfigInvalid, Severity: Warning, File: cfg.Path, Message: c.ConfigErr.Error()}}
	}
	var out []Finding
	if cfg.UnreadFields > 0 {
		out = append(out, Finding{Code: CodeConfigInvalid, Severity: Warning, File: cfg.Path,
			Message: fmt.Sprintf("more than %s top-level fields: the %s after the first %s were not read, so they are neither compared nor seen by adapter rules",
				textfmt.Thousands(checkpoint.MaxConfigFields), textfmt.Thousands(cfg.UnreadFields), textfmt.Thousands(checkpoint.MaxConfigFields))})
	}
	for _, p := range cfg.Problems {
		field, _, _ := strings.Cut(p, " ")
		out = append(out, Finding{Code: CodeConfigInvalid, Severity: Warning, File: cfg.Path, Key: field, Message: p + "; the checks that need it were skipped"})
	}
	mismatch := func(key, msg string, expected, got any) {
		out = append(out, Finding{Code: CodeConfigMismatch, Severity: Warning, File: cfg.Path, Key: key, Message: msg, Expected: expected, Got: got})
	}
	layers := make(map[uint64]bool)
	var paramsByDType [32]uint64
	for _, sc := range scans {
		maps.Copy(layers, sc.layers)
		for d, n := range sc.params {
			paramsByDType[d] += n
		}
	}
	if cfg.VocabSize > 0 && cfg.HiddenSize > 0 {
		for _, name := range EmbeddingNames {
			t := c.Tensor(name)
			if t == nil {
				continue
			}
			want := []uint64{cfg.VocabSize, cfg.HiddenSize}
			// Vocabularies are often padded past vocab_size; a smaller
			// embedding, or another width, is what breaks loading.
			if len(t.Shape) != 2 || t.Shape[0] < cfg.VocabSize || t.Shape[1] != cfg.HiddenSize {
				mismatch(name, fmt.Sprintf("embedding shape %s does not fit vocab_size %s × hidden_size %s",
					safetensors.FormatShape(t.Shape), textfmt.Thousands(cfg.VocabSize), textfmt.Thousands(cfg.HiddenSize)), want, t.Shape)
			}
			break
		}
	}
	// The layer count is checked against the layers present, never by
	// counting up to it: the number comes from the file.
	if cfg.NumHiddenLayers > 0 && len(layers) > 0 && c.PartOf == nil {
		maxLayer := slices.Max(slices.Collect(maps.Keys(layers)))
		first := uint64(0)
		for layers[first] {
			first++
		}
		// DeepSeek-V3 stores its multi-token-prediction layers after the
		// decoder's: model.layers.61 for num_hidden_layers 61.
		limit := cfg.NumHiddenLayers
		if mtp := cfg.Ints["num_nextn_predict_layers"]; mtp <= math.MaxUint64-limit {
			limit += mtp
		}
		switch {
		case maxLayer >= limit:
			mismatch("", fmt.Sprintf("num_hidden_layers is %s but layer %d is present", textfmt.Thousands(cfg.NumHiddenLayers), maxLayer), cfg.NumHiddenLayers, maxLayer+1)
		case uint64(len(layers)) < cfg.NumHiddenLayers:
			missing := cfg.NumHiddenLayers - uint64(len(layers))
			mismatch("", fmt.Sprintf("num_hidden_layers is %s but %s have no tensors (first: %d)", textfmt.Thousands(cfg.NumHiddenLayers), textfmt.Plural(missing, "layer"), first), cfg.NumHiddenLayers, len(layers))
		}
	}
	if want, ok := safetensors.LookupDType(cfg.DType); ok && cfg.DType != "" && !cfg.Quantized {
		var dominant safetensors.DType
		var most uint64
		for _, d := range safetensors.DTypes() {
			if paramsByDType[d] > most {
				dominant, most = d, paramsByDType[d]
			}
		}
		if most > 0 && dominant != want {
			var params, stored uint64
			for _, d := range safetensors.DTypes() {
				params += paramsByDType[d]
				stored += paramsByDType[d] * uint64(d.Bits()) / 8
			}
			claimed := params * uint64(want.Bits()) / 8
			mismatch(configDTypeKey, fmt.Sprintf("config.json says %s but most parameters are stored as %s: the checkpoint is %s the size its config claims (%s bytes of parameters, not %s)",
				cfg.DType, dominant, sizeRatio(stored, claimed), textfmt.Thousands(stored), textfmt.Thousands(claimed)), want, dominant)
		}
	}
	return out
}

// configDTypeKey is the key of the config_mismatch that compares the
// stored dtypes with config.json's dtype.
const configDTypeKey = "dtype"

// sizeRatio says how a size compares with another: "twice", "half",
// "4 times", "1.5 times".
func sizeRatio(got, claimed uint64) string {
	if claimed == 0 {
		return "not"
	}
	switch r := float64(got) / float64(claimed); r {
	case 2:
		return "twice"
	case 0.5:
		return "half"
	case 0.25:
		return "a quarter of"
	default:
		return textfmt.Float(r) + " times"
	}
}
