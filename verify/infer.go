package verify

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// inferSide infers the adapter of one side (the one in an unknown
// naming) from the two headers, the other side's HF names the template,
// and, when values is set, from samples of the candidates the headers
// leave open, read here (the adapter package reads no files): at most
// adapter.MaxSampleBytes in all. The same inference runs for either
// side, the roles swapped: its adapter maps the side's names to HF names.
func inferSide(side Side, pub, exp *Mapped, physical [2][]safetensors.TensorInfo, env adapter.Env, values bool) (*adapter.Inference, *adapter.Adapter, error) {
	tpl, unk := 0, 1
	if side == Published {
		tpl, unk = 1, 0
	}
	sides := [2]*Mapped{pub, exp}
	inf, err := adapter.Infer(physical[tpl], physical[unk], env, adapter.InferOptions{Side: string(side),
		From: fmt.Sprintf("published %s and exported %s", pub.Checkpoint.Path, exp.Checkpoint.Path)})
	if err != nil {
		return nil, nil, fmt.Errorf("--adapter %s=infer: %v", side, err)
	}
	if values {
		samples := inf.Samples()
		var budget int64 = adapter.MaxSampleBytes
		// Candidates of one template read the same blocks (the published
		// tensor always, the exported one for each rename): each block is
		// read, and counted against the budget, once.
		read := map[string][]float64{}
		block := func(t adapter.Tensor, side int, srcs []Source, s *adapter.Sample) ([]float64, error) {
			rows, cols := s.Rows, s.Cols
			key := blockKey(side, t, s)
			if b, ok := read[key]; ok {
				return b, nil
			}
			cost := int64(rows*cols) * int64(t.DType.Bits()/8)
			if cost > budget {
				return nil, errSampleBudget
			}
			b, err := readBlock(t, srcs, s.Row0, s.Col0, rows, cols)
			if err != nil {
				return nil, err
			}
			budget -= cost
			read[key] = b
			return b, nil
		}
		for i := range samples {
			s := &samples[i]
			// Sample.Published is the template's block, Exported the
			// mapped side's.
			p, perr := block(s.Published, tpl, sides[tpl].Sources, s)
			e, eerr := block(s.Exported, unk, sides[unk].Sources, s)
			if perr != nil || eerr != nil {
				continue // settles nothing: reported as ambiguous
			}
			s.Pub, s.Exp = p, e
		}
		inf.Settle(samples)
	}
	a, err := inf.Adapter()
	if err != nil {
		return nil, nil, fmt.Errorf("--adapter %s=infer: the inferred adapter does not parse: %v", side, err)
	}
	return inf, a, nil
}

// inferenceMayHelp says whether auto falls back to inference: no preset
// reached half of the published keys, the published side is read as it
// is (inference maps onto its physical names), and no prefix explains
// the difference (low_key_overlap's hint names the simpler fix).
func (d *Comparison) inferenceMayHelp(common int) bool {
	pub, exp := d.Published.View, d.Exported.View
	if 2*common >= len(pub.Tensors) || pub.Adapter != "hf" {
		return false
	}
	_, strip := commonPrefix(exp, pub)
	_, add := commonPrefix(pub, exp)
	return 2*(common+max(strip, add)) < len(pub.Tensors)
}

// blockKey names the block a sample reads of one side's logical tensor:
// built by hand, as fmt.Sprint of the segments took most of inference's
// time on a dense model.
func blockKey(side int, t adapter.Tensor, s *adapter.Sample) string {
	b := make([]byte, 0, 32+24*len(t.Segments))
	b = strconv.AppendInt(b, int64(side), 10)
	for _, seg := range t.Segments {
		b = strconv.AppendInt(append(b, '|'), int64(seg.Source), 10)
		b = strconv.AppendUint(append(b, ':'), seg.Offset, 10)
		b = strconv.AppendUint(append(b, '+'), seg.Length, 10)
	}
	for _, d := range t.Shape {
		b = strconv.AppendUint(append(b, ','), d, 10)
	}
	b = strconv.AppendBool(append(b, ' '), t.Transposed)
	for _, n := range []uint64{s.Rows, s.Cols, s.Row0, s.Col0} {
		b = strconv.AppendUint(append(b, ' '), n, 10)
	}
	return string(b)
}

var errSampleBudget = fmt.Errorf("sample budget of %d bytes spent", adapter.MaxSampleBytes)

// readBlock reads rows x cols elements at row0, col0 of a logical
// tensor's first matrix (a vector: cols elements at col0), as float64.
func readBlock(t adapter.Tensor, srcs []Source, row0, col0, rows, cols uint64) ([]float64, error) {
	es := uint64(t.DType.Bits() / 8)
	switch t.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.F64:
	default:
		return nil, fmt.Errorf("%s: %s values are not sampled", t.Name, t.DType)
	}
	if t.Interleave != nil || slices.ContainsFunc(t.Segments, func(s adapter.Segment) bool { return s.Transposed }) {
		return nil, fmt.Errorf("%s: interleaved values or tiles stored transposed are not sampled", t.Name)
	}
	out := make([]float64, 0, rows*cols)
	n := len(t.Shape)
	if n < 2 {
		b, err := readLogical(t, srcs, col0*es, cols*es)
		if err != nil {
			return nil, err
		}
		return decodeAll(out, b, t.DType), nil
	}
	r, c := t.Shape[n-2], t.Shape[n-1]
	if row0+rows > r || col0+cols > c {
		return nil, fmt.Errorf("%s: sample past the tensor's shape", t.Name)
	}
	if !t.Transposed && c <= 4*cols {
		// Rows not much wider than the block: one read of them all, not
		// one a row (a sample of a cold file is then one seek).
		b, err := readLogical(t, srcs, row0*c*es, rows*c*es)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			out = decodeAll(out, b[(i*c+col0)*es:(i*c+col0+cols)*es], t.DType)
		}
		return out, nil
	}
	if !t.Transposed {
		for i := range rows {
			b, err := readLogical(t, srcs, ((row0+i)*c+col0)*es, cols*es)
			if err != nil {
				return nil, err
			}
			out = decodeAll(out, b, t.DType)
		}
		return out, nil
	}
	// Stored [c, r]: logical column j is stored row j.
	stored := make([][]float64, cols)
	for j := range cols {
		b, err := readLogical(t, srcs, ((col0+j)*r+row0)*es, rows*es)
		if err != nil {
			return nil, err
		}
		stored[j] = decodeAll(nil, b, t.DType)
	}
	for i := range rows {
		for j := range cols {
			out = append(out, stored[j][i])
		}
	}
	return out, nil
}

// readLogical reads n bytes at off of the tensor's segment stream.
func readLogical(t adapter.Tensor, srcs []Source, off, n uint64) ([]byte, error) {
	out := make([]byte, 0, n)
	var base uint64
	for _, seg := range t.Segments {
		if n == 0 {
			break
		}
		if off >= base+seg.Length {
			base += seg.Length
			continue
		}
		within := off - base
		take := min(n, seg.Length-within)
		src := srcs[seg.Source]
		h := src.Shard.Safetensors()
		if src.Shard.File == nil || h == nil {
			return nil, fmt.Errorf("%s: shard not readable", t.Name)
		}
		buf := make([]byte, take)
		if _, err := h.DataSection().ReadAt(buf, int64(src.Tensor.DataOffsets[0]+seg.Offset+within)); err != nil {
			return nil, fmt.Errorf("%s: %v", t.Name, err)
		}
		out = append(out, buf...)
		off, n, base = off+take, n-take, base+seg.Length
	}
	if n != 0 {
		return nil, fmt.Errorf("%s: sample past the tensor's bytes", t.Name)
	}
	return out, nil
}

func decodeAll(out []float64, b []byte, d safetensors.DType) []float64 {
	switch d {
	case safetensors.F32:
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
		}
	case safetensors.F64:
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])))
		}
	case safetensors.BF16:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[i:]))<<16)))
		}
	case safetensors.F16:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(float16.Frombits(binary.LittleEndian.Uint16(b[i:])).Float32()))
		}
	}
	return out
}

// inferenceNotes adds to each key of the inferred side that inference
// left unmapped why, and its best candidate; and says, on every finding of
// a mapped key, that the mapping was inferred.
func (d *Comparison) inferenceNotes(fs []Finding) []Finding {
	if d.Inference == nil {
		return fs
	}
	side := d.InferredSide
	unmapped, lacking := unmappedCodes(side)
	notes := d.Inference.Notes()
	for i := range fs {
		f := &fs[i]
		name := f.Key
		if f.Physical != "" {
			name = f.Physical
		}
		if note, ok := notes[name]; ok && f.Code == unmapped {
			f.Message += "; " + note
		} else if f.Code == CodeShapeMismatch || f.Code == CodeDTypeMismatch || f.Code == lacking {
			f.Message += " (adapter inferred)"
		}
	}
	rep := d.Inference.Report()
	if f, ok := ambiguityFinding(rep, side); ok {
		fs = append(fs, f)
	}
	for _, c := range rep.Conflicts {
		fs = append(fs, Finding{Code: CodeInferConflict, Severity: Error, Side: side,
			Message: "inference: " + c.Summary()})
	}
	return fs
}

// unmappedCodes are the codes of an inferred side's keys: those it has
// that the other side lacks (its tensors left unmapped among them), and
// those it lacks. The exported side's extra keys are unexpected_key, the
// published side's missing_key.
func unmappedCodes(side Side) (extra, lacking Code) {
	if side == Published {
		return CodeMissingKey, CodeUnexpectedKey
	}
	return CodeUnexpectedKey, CodeMissingKey
}

// ambiguityFinding says, once, which templates inference left between
// candidates of the inferred side and what would settle them: values,
// when only the headers were read; nothing, when the samples could not.
func ambiguityFinding(r adapter.InferReport, side Side) (Finding, bool) {
	if len(r.Ambiguities) == 0 {
		return Finding{}, false
	}
	var names []string
	for _, a := range r.Ambiguities[:min(len(r.Ambiguities), maxListedAmbiguities)] {
		names = append(names, fmt.Sprintf("%s (%d candidates)", a.Exported, a.Count))
	}
	list := strings.Join(names, ", ")
	if more := len(r.Ambiguities) - len(names); more > 0 {
		list += fmt.Sprintf(", and %d more", more)
	}
	extra, _ := unmappedCodes(side)
	msg := fmt.Sprintf("inference from names and shapes left %s between candidates of equal shape: %s; their tensors are %s. The values of one instance each would settle them: compare with --adapter %s=infer",
		textfmt.Plural(len(r.Ambiguities), "template"), list, extra, side)
	if r.Settled {
		msg = fmt.Sprintf("inference left %s between candidates the sampled values fit equally well or not at all: %s; their tensors are %s (map them with --adapter-file)",
			textfmt.Plural(len(r.Ambiguities), "template"), list, extra)
	}
	return Finding{Code: CodeInferAmbiguous, Severity: Warning, Side: side, Message: msg}, true
}

// maxListedAmbiguities is how many ambiguous templates a finding or the
// JSON input names; the rest are counted.
const maxListedAmbiguities = 5

// An InferredInput is what JSON says of an inferred adapter beside
// inputs[].adapter ("infer").
type InferredInput struct {
	Rules       int      `json:"rules"`
	Mapped      int      `json:"mapped_templates"`
	Templates   int      `json:"templates"`
	Ambiguities int      `json:"ambiguities"`
	Ambiguous   []string `json:"ambiguous,omitempty"`
	// Conflicts counts the templates whose best fit their names or their
	// siblings contradict (inference_conflict).
	Conflicts   int   `json:"conflicts"`
	SampleBytes int64 `json:"sample_bytes"`
	// Values says whether samples were read (--adapter SIDE=infer) or
	// only the headers (auto's fallback).
	Values bool `json:"values"`
}

// DescribeInference summarises an inference for the report's input.
func DescribeInference(inf *adapter.Inference) *InferredInput {
	r := inf.Report()
	in := &InferredInput{Rules: r.Rules, Mapped: r.Mapped, Templates: r.Templates[1], Ambiguities: len(r.Ambiguities),
		Conflicts: len(r.Conflicts), SampleBytes: r.SampleBytes, Values: r.Settled}
	for _, a := range r.Ambiguities[:min(len(r.Ambiguities), maxListedAmbiguities)] {
		in.Ambiguous = append(in.Ambiguous, a.Exported+": "+a.Summary())
	}
	return in
}
