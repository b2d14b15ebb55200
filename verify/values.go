package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// chunkElems is how many elements a worker reads per side at a time: 1 MiB
// of F32, small enough that a chunk is still in cache when it is compared.
// Memory is this times the element sizes, per worker, whatever the
// checkpoint's size.
var chunkElems uint64 = 1 << 18 // a variable so tests can make it small

// blockElems is how many elements are decoded to float64 at a time, so the
// decoded values stay in cache.
const blockElems = 4096

// maxParts caps the work items of one tensor, whose partial results are
// kept until the tensor is done.
var maxParts uint64 = 64

// ValueOptions configures CompareValues.
type ValueOptions struct {
	Policy ValuePolicy
	// Workers is how many goroutines read and compare; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called as the work advances with the bytes read
	// and the bytes to read in all, which changes as the first pass finds
	// tensors that need the second.
	Progress func(done, total int64)
}

// TensorStats is how one compared tensor differs between the two sides.
type TensorStats struct {
	Key       string            `json:"key"`
	Published safetensors.DType `json:"published_dtype"`
	Exported  safetensors.DType `json:"exported_dtype"`
	Elements  uint64            `json:"elements"`
	// Mismatches counts elements outside the tolerance.
	Mismatches   uint64 `json:"mismatches"`
	BitIdentical bool   `json:"bit_identical"`
	// MaxAbsDiff is the largest |e − p| over finite pairs, at MaxAt
	// (coordinates), where the sides hold PublishedAt and ExportedAt.
	MaxAbsDiff  jsonFloat `json:"max_abs_diff"`
	MaxAt       []uint64  `json:"max_at,omitempty"`
	PublishedAt jsonFloat `json:"published_at"`
	ExportedAt  jsonFloat `json:"exported_at"`
	MeanAbsDiff jsonFloat `json:"mean_abs_diff"`
	// RelL2 is ‖e − p‖ / ‖p‖ and Cosine the cosine similarity, over
	// finite pairs; null where undefined (a zero tensor).
	RelL2  jsonFloat `json:"rel_l2"`
	Cosine jsonFloat `json:"cosine"`
	// NonFinite counts exported NaN or Inf where the published value is finite.
	NonFinite uint64    `json:"nonfinite"`
	Tolerance Tolerance `json:"tolerance"`
	Skipped   string    `json:"skipped,omitempty"`

	constant bool // either side constant: no evidence of re-initialization
	worstNaN []uint64
}

// ValueReport sums up a value comparison.
type ValueReport struct {
	Compared        int           `json:"compared"`
	BitIdentical    int           `json:"bit_identical"`
	Equal           int           `json:"equal"` // equal values in other bytes (an exact upcast)
	WithinTolerance int           `json:"within_tolerance"`
	Mismatched      int           `json:"mismatched"`
	Skipped         int           `json:"skipped"`
	BytesRead       int64         `json:"bytes_read"`
	Tensors         []TensorStats `json:"tensors"`
}

// jsonFloat is a float64 that writes NaN and ±Inf as null, which JSON lacks.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = jsonFloat(v)
	return err
}

// An operand is one side of a comparison: a logical tensor and the
// physical tensors its segments point into.
type operand struct {
	t   adapter.Tensor
	src []Source
}

func (o operand) size() uint64 {
	n, _ := safetensors.TensorInfo{Shape: o.t.Shape}.NumElements()
	return n * uint64(o.t.DType.Bits()) / 8
}

// unreadable says why the operand's bytes cannot be trusted, or "": a shard
// that failed validation (truncated, overlapping offsets) is not read.
func (o operand) unreadable() string {
	for _, seg := range o.t.Segments {
		if s := o.src[seg.Source].Shard; s.Err != nil {
			return fmt.Sprintf("%s failed validation; its values are not read", s.Path)
		}
	}
	return ""
}

// read fills buf with the logical tensor's bytes from off on, walking its
// segments in order.
func (o operand) read(buf []byte, off uint64) error {
	var base uint64
	for _, seg := range o.t.Segments {
		if len(buf) == 0 {
			return nil
		}
		if off >= base+seg.Length {
			base += seg.Length
			continue
		}
		s := o.src[seg.Source]
		within := off - base
		n := min(uint64(len(buf)), seg.Length-within)
		if err := s.Shard.File.ReadTensorAt(s.Info, buf[:n], seg.Offset+within); err != nil {
			return fmt.Errorf("%s: %w", s.Shard.Path, err)
		}
		buf, off, base = buf[n:], off+n, base+seg.Length
	}
	if len(buf) > 0 {
		return fmt.Errorf("tensor %q: segments end before its %d bytes", o.t.Name, o.size())
	}
	return nil
}

// A comparison is one pair of tensors to compare element by element.
type comparison struct {
	key      string
	pub, exp operand
	tol      Tolerance
	stats    TensorStats
	tie      string // for a tie check, the side; "" for published vs exported
	dirty    atomic.Bool
	done     bool // decided without reading
	parts    []partial
}

// CompareValues compares the values of every tensor the diff matched with
// the same shape, and, where a side holds a tied lm_head.weight, that head
// with the side's embedding. Reads go through io.ReaderAt into bounded,
// reused buffers on all cores; ctx stops it between chunks.
func (d *Diffed) CompareValues(ctx context.Context, opt ValueOptions) (*ValueReport, []Finding, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rep := &ValueReport{Tensors: []TensorStats{}}
	var cmps []*comparison
	pubV, expV := d.Views[0], d.Views[1]
	for _, p := range pubV.Tensors {
		e, ok := expV.Tensor(p.Name)
		if !ok || !slices.Equal(p.Shape, e.Shape) {
			continue // the structural diff reports it
		}
		c := &comparison{key: p.Name, pub: operand{p, d.Sources[0]}, exp: operand{e, d.Sources[1]}}
		c.stats = TensorStats{Key: p.Name, Published: p.DType, Exported: e.DType}
		c.stats.Elements, _ = safetensors.TensorInfo{Shape: p.Shape}.NumElements()
		tol, skip := opt.Policy.For(p.Name)
		c.tol, c.stats.Tolerance = tol, tol
		if skip == "" {
			skip = uncomparable(p.DType, e.DType)
		}
		if skip == "" {
			skip = c.pub.unreadable() + c.exp.unreadable()
		}
		if skip != "" {
			c.stats.Skipped = skip
			rep.Skipped++
			rep.Tensors = append(rep.Tensors, c.stats)
			continue
		}
		cmps = append(cmps, c)
	}
	ties := d.tieChecks()
	all := slices.Clone(cmps)
	for _, c := range ties {
		if !c.done {
			all = append(all, c)
		}
	}
	read, err := runComparisons(ctx, all, workers, opt.Progress)
	rep.BytesRead = read
	if err != nil {
		return nil, nil, err
	}
	var findings []Finding
	var unchanged []string
	for _, c := range cmps {
		s := c.stats
		rep.Compared++
		switch {
		case s.BitIdentical:
			rep.BitIdentical++
			unchanged = append(unchanged, s.Key)
		case s.Mismatches > 0 || s.reinitialized():
			rep.Mismatched++
		case c.tol == (Tolerance{}) || s.MaxAbsDiff == 0:
			rep.Equal++
		default:
			rep.WithinTolerance++
		}
		rep.Tensors = append(rep.Tensors, s)
		findings = append(findings, valueFindings(&s)...)
	}
	for _, c := range ties {
		if c.stats.Mismatches > 0 {
			findings = append(findings, Finding{Code: CodeTiedWeightMismatch, Severity: Error, Side: c.tie, Key: LMHead,
				Message: fmt.Sprintf("differs from the tied %s on the %s side: %d of %d elements, worst |Δ| %s at %s",
					c.pub.t.Name, c.tie, c.stats.Mismatches, c.stats.Elements, fmtFloat(float64(c.stats.MaxAbsDiff)), coords(c.stats.MaxAt))})
		}
	}
	if opt.Policy.Tolerant() && len(unchanged) > 0 {
		msg := fmt.Sprintf("%s bit-identical to the published ones although a fine-tune was expected (frozen on purpose, or never updated?)",
			plural(len(unchanged), "tensor"))
		findings = append(findings, Finding{Code: CodeUnchanged, Severity: Info, Message: msg, Keys: unchanged})
	}
	return rep, findings, nil
}

// ValueBytes is how many bytes CompareValues reads at least: both sides of
// every tensor matched with the same shape.
func (d *Diffed) ValueBytes() int64 {
	var n int64
	for _, p := range d.Views[0].Tensors {
		if e, ok := d.Views[1].Tensor(p.Name); ok && slices.Equal(p.Shape, e.Shape) {
			n += int64(operand{t: p}.size() + operand{t: e}.size())
		}
	}
	return n
}

// uncomparable says why two dtypes' values cannot be compared, or "".
func uncomparable(p, e safetensors.DType) string {
	switch {
	case p == e:
		return ""
	case !p.Decodable() || !e.Decodable():
		return fmt.Sprintf("%s and %s: sub-byte floats compare bit for bit, only within one dtype", p, e)
	case p == safetensors.C64 || e == safetensors.C64:
		return fmt.Sprintf("%s and %s: complex values compare only with complex", p, e)
	}
	return ""
}

// tieChecks lists, per side, lm_head.weight against that side's embedding
// when the diff found the embeddings tied.
func (d *Diffed) tieChecks() []*comparison {
	if !d.tie.tied {
		return nil
	}
	var out []*comparison
	for i, v := range d.Views {
		head, ok := v.Tensor(LMHead)
		if !ok {
			continue
		}
		for _, name := range embeddingNames {
			emb, ok := v.Tensor(name)
			if !ok {
				continue
			}
			c := &comparison{key: LMHead, tie: [2]string{Published, Exported}[i],
				pub: operand{emb, d.Sources[i]}, exp: operand{head, d.Sources[i]}}
			c.stats = TensorStats{Key: LMHead, Published: emb.DType, Exported: head.DType}
			c.stats.Elements, _ = safetensors.TensorInfo{Shape: head.Shape}.NumElements()
			if !slices.Equal(emb.Shape, head.Shape) || uncomparable(emb.DType, head.DType) != "" {
				// Nothing to compare element by element: they differ.
				c.stats.Mismatches = c.stats.Elements
				c.stats.MaxAbsDiff = jsonFloat(math.NaN())
				c.done = true
			}
			out = append(out, c)
			break
		}
	}
	return out
}

// reinitialized reports values unrelated to the published ones. A fine-tune
// moves weights by ~1e-3 relative; an unrelated tensor (another seed, another
// layer, never loaded) by ~1. This holds whatever the tolerance.
func (s *TensorStats) reinitialized() bool {
	return !s.constant && float64(s.Cosine) < 0.5 && float64(s.RelL2) > 0.5
}

func valueFindings(s *TensorStats) []Finding {
	var out []Finding
	switch {
	case s.reinitialized():
		out = append(out, Finding{Code: CodeReinitialized, Severity: Error, Key: s.Key,
			Message: fmt.Sprintf("values unrelated to the published ones (cosine %s, relative L2 %s): random init, wrong file, or weights never loaded", fmtFloat(float64(s.Cosine)), fmtFloat(float64(s.RelL2))),
			Got:     map[string]any{"cosine": s.Cosine, "rel_l2": s.RelL2}})
	case s.Mismatches > 0:
		msg := fmt.Sprintf("%d of %d elements outside %s; worst |Δ| %s at %s (published %s, exported %s)",
			s.Mismatches, s.Elements, s.Tolerance, fmtFloat(float64(s.MaxAbsDiff)), coords(s.MaxAt), fmtFloat(float64(s.PublishedAt)), fmtFloat(float64(s.ExportedAt)))
		switch {
		case s.worstNaN != nil && (s.MaxAt == nil || s.MaxAbsDiff == 0):
			msg = fmt.Sprintf("%d of %d elements outside %s; first at %s (NaN or Inf on one side)", s.Mismatches, s.Elements, s.Tolerance, coords(s.worstNaN))
		case s.worstNaN != nil:
			msg += fmt.Sprintf("; NaN or Inf on one side first at %s", coords(s.worstNaN))
		}
		out = append(out, Finding{Code: CodeValueMismatch, Severity: Error, Key: s.Key, Message: msg,
			Got: map[string]any{"mismatches": s.Mismatches, "max_abs_diff": s.MaxAbsDiff, "rel_l2": s.RelL2}})
	}
	if s.NonFinite > 0 {
		out = append(out, Finding{Code: CodeNonFinite, Severity: Error, Side: Exported, Key: s.Key,
			Message: fmt.Sprintf("%d NaN or Inf values where the published tensor is finite", s.NonFinite)})
	}
	return out
}

func (t Tolerance) String() string {
	if t == (Tolerance{}) {
		return "exact equality"
	}
	return fmt.Sprintf("atol %g + rtol %g·|p|", t.Atol, t.Rtol)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func coords(at []uint64) string {
	if at == nil {
		return "?"
	}
	return safetensors.FormatShape(at)
}

// A chunk is a run of elements of one comparison.
type chunk struct {
	c          *comparison
	part       int
	start, len uint64
}

// runComparisons checks every comparison in two passes: first a cheap exact
// check per chunk (bytes, or an exact upcast), then, only for tensors where
// that failed, the full decode with statistics. Most round trips never
// reach the second pass.
func runComparisons(ctx context.Context, cmps []*comparison, workers int, progress func(done, total int64)) (int64, error) {
	var read, done, total atomic.Int64
	for _, c := range cmps {
		total.Add(int64(c.pub.size() + c.exp.size()))
	}
	advance := func(n uint64) {
		d := done.Add(int64(n))
		if progress != nil {
			progress(d, total.Load())
		}
	}
	chunksOf := func(filter func(*comparison) bool) []chunk {
		var out []chunk
		for _, c := range cmps {
			if !filter(c) {
				continue
			}
			// At most maxParts work items a tensor, so that the partial
			// results kept do not grow with the checkpoint; a worker reads
			// an item chunkElems at a time.
			n := c.stats.Elements
			per := max(chunkElems, (n+maxParts-1)/maxParts)
			per = (per + chunkElems - 1) / chunkElems * chunkElems
			parts := int((n + per - 1) / per)
			c.parts = make([]partial, max(parts, 1))
			for i := range parts {
				start := uint64(i) * per
				out = append(out, chunk{c: c, part: i, start: start, len: min(per, n-start)})
			}
		}
		return out
	}
	chunkBytes := func(ch chunk) uint64 {
		return bytesFor(ch.c.pub.t.DType, ch.len) + bytesFor(ch.c.exp.t.DType, ch.len)
	}
	// Pass 1: exact check where a fast one exists. A tensor found to
	// differ skips the rest of its chunks: the second pass reads it all.
	first := chunksOf(func(c *comparison) bool { return fastExact(c.pub.t.DType, c.exp.t.DType) })
	if err := parallel(ctx, first, workers, func(w *worker, ch chunk) error {
		return w.each(ch, func(piece chunk) bool {
			if ch.c.dirty.Load() {
				rest := ch.start + ch.len - piece.start
				total.Add(-int64(bytesFor(ch.c.pub.t.DType, rest) + bytesFor(ch.c.exp.t.DType, rest))) // not read after all
				advance(0)
				return false
			}
			p, e, err := w.load(piece)
			if err != nil {
				w.err = err
				return false
			}
			read.Add(int64(len(p) + len(e)))
			if !exactChunk(ch.c.pub.t.DType, ch.c.exp.t.DType, p, e) && ch.c.dirty.CompareAndSwap(false, true) {
				total.Add(int64(ch.c.pub.size() + ch.c.exp.size())) // read again in pass 2
			}
			advance(chunkBytes(piece))
			return true
		})
	}); err != nil {
		return read.Load(), err
	}
	for _, c := range cmps {
		switch {
		case !fastExact(c.pub.t.DType, c.exp.t.DType):
			c.dirty.Store(true)
		case !c.dirty.Load():
			c.stats.BitIdentical = c.pub.t.DType == c.exp.t.DType
			c.stats.RelL2, c.stats.Cosine = 0, 1
			c.stats.constant = true
		}
	}
	// Pass 2: full statistics.
	second := chunksOf(func(c *comparison) bool { return c.dirty.Load() })
	err := parallel(ctx, second, workers, func(w *worker, ch chunk) error {
		var sum partial
		err := w.each(ch, func(piece chunk) bool {
			p, e, err := w.load(piece)
			if err != nil {
				w.err = err
				return false
			}
			read.Add(int64(len(p) + len(e)))
			sum.merge(w.compare(piece, p, e))
			advance(chunkBytes(piece))
			return true
		})
		ch.c.parts[ch.part] = sum
		return err
	})
	for _, c := range cmps {
		if c.dirty.Load() {
			c.finish()
		}
	}
	return read.Load(), err
}

// fastExact reports whether pass 1 can check the pair exactly without
// decoding: same dtype (bytes), or BF16/F16 published against F32.
func fastExact(p, e safetensors.DType) bool {
	return p == e || (e == safetensors.F32 && (p == safetensors.BF16 || p == safetensors.F16))
}

// exactChunk is pass 1: true when every element is bit-identical, or is the
// exact F32 upcast of the published BF16/F16 value.
func exactChunk(pd, ed safetensors.DType, p, e []byte) bool {
	switch {
	case pd == ed:
		return bytes.Equal(p, e)
	case pd == safetensors.BF16:
		return bf16UpcastEqual(p, e)
	case pd == safetensors.F16:
		for i := 0; i+1 < len(p); i += 2 {
			if math.Float32bits(safetensors.F16ToFloat32(binary.LittleEndian.Uint16(p[i:]))) != binary.LittleEndian.Uint32(e[2*i:]) {
				return false
			}
		}
		return true
	}
	return false
}

// bf16UpcastEqual reports whether e (F32) is exactly p (BF16) widened: the
// F32 bits of BF16 bits b are b<<16. It reads both as words (a word of four
// BF16 values spreads into two of F32) and folds differences into one
// accumulator, so the loop has no branch but its own; this check runs over
// every byte of a torchtitan-style F32 export.
func bf16UpcastEqual(p, e []byte) bool {
	words := len(p) / 8
	aligned := words > 0 && uintptr(unsafe.Pointer(&p[0]))%8 == 0 && uintptr(unsafe.Pointer(&e[0]))%8 == 0
	if littleEndian && aligned {
		pw := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(p))), words)
		ew := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e))), 2*words)
		var diff uint64
		for j, w := range pw {
			lo := (w&0xFFFF)<<16 | (w&0xFFFF_0000)<<32
			hi := (w&0xFFFF_0000_0000)>>16 | w&0xFFFF_0000_0000_0000
			diff |= (lo ^ ew[2*j]) | (hi ^ ew[2*j+1])
		}
		if diff != 0 {
			return false
		}
		p, e = p[8*words:], e[16*words:]
	}
	for i := 0; i+1 < len(p); i += 2 {
		if uint32(binary.LittleEndian.Uint16(p[i:]))<<16 != binary.LittleEndian.Uint32(e[2*i:]) {
			return false
		}
	}
	return true
}

// littleEndian is true on the hosts safetensors files are native to; only
// there may bytes be read as machine words.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func parallel(ctx context.Context, chunks []chunk, workers int, do func(*worker, chunk) error) error {
	if len(chunks) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(chunks)) {
		wg.Go(func() {
			w := &worker{}
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(chunks) {
					return
				}
				if err := do(w, chunks[i]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// A worker owns its read and decode buffers, reused for every chunk.
type worker struct {
	err        error
	pbuf, ebuf []byte
	pf, ef     [2 * blockElems]float64
}

// each calls fn for the pieces of ch, chunkElems elements at a time, in
// order, until fn returns false; fn loads each piece itself (so a skipped
// piece is never read) and leaves an error in w.err.
func (w *worker) each(ch chunk, fn func(piece chunk) bool) error {
	w.err = nil
	for off := uint64(0); off < ch.len; off += chunkElems {
		piece := ch
		piece.start, piece.len = ch.start+off, min(chunkElems, ch.len-off)
		if !fn(piece) {
			break
		}
	}
	return w.err
}

func (w *worker) load(ch chunk) (p, e []byte, err error) {
	pd, ed := ch.c.pub.t.DType, ch.c.exp.t.DType
	pn, en := bytesFor(pd, ch.len), bytesFor(ed, ch.len)
	w.pbuf = grow(w.pbuf, pn)
	w.ebuf = grow(w.ebuf, en)
	if err := ch.c.pub.read(w.pbuf[:pn], bytesFor(pd, ch.start)); err != nil {
		return nil, nil, err
	}
	if err := ch.c.exp.read(w.ebuf[:en], bytesFor(ed, ch.start)); err != nil {
		return nil, nil, err
	}
	return w.pbuf[:pn], w.ebuf[:en], nil
}

func bytesFor(d safetensors.DType, elems uint64) uint64 { return elems * uint64(d.Bits()) / 8 }

func grow(b []byte, n uint64) []byte {
	if uint64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// partial is one chunk's statistics; chunks merge in order, so results do
// not depend on scheduling.
type partial struct {
	n, mismatches, nonfinite uint64
	sumAbs, sumD2, sumP2     float64
	sumE2, sumPE             float64
	maxAbs, maxP, maxE       float64
	maxIdx                   uint64
	hasMax                   bool
	nanIdx                   uint64
	hasNaN                   bool
	// Constant tensors are no evidence of re-initialization: track the
	// first finite value of each side and whether any other differs.
	pFirst, eFirst   float64
	hasFirst         bool
	pVaries, eVaries bool
	bitDiff          bool
}

func (w *worker) compare(ch chunk, p, e []byte) partial {
	pd, ed := ch.c.pub.t.DType, ch.c.exp.t.DType
	r := partial{n: ch.len}
	if !pd.Decodable() { // sub-byte floats of one dtype: bit for bit
		for i := range p {
			if p[i] != e[i] {
				r.mismatches++
			}
		}
		r.bitDiff = r.mismatches > 0
		return r
	}
	ints := pd.IsInteger() && ed.IsInteger() && ch.c.tol == (Tolerance{})
	lanes := uint64(pd.Lanes())
	psz, esz := uint64(pd.Bits()/8), uint64(ed.Bits()/8)
	for off := uint64(0); off < ch.len; off += blockElems {
		n := min(blockElems, ch.len-off)
		np := safetensors.DecodeFloat64(pd, p[off*psz:(off+n)*psz], w.pf[:])
		safetensors.DecodeFloat64(ed, e[off*esz:(off+n)*esz], w.ef[:])
		if ints {
			r.ints(pd, ed, p[off*psz:], e[off*esz:], w.pf[:np], w.ef[:np], ch.start+off)
		} else {
			r.floats(w.pf[:np], w.ef[:np], ch.start+off, lanes, ch.c.tol)
		}
	}
	r.bitDiff = pd != ed || !bytes.Equal(p, e)
	return r
}

// floats is the hot loop of a value comparison: statistics over finite
// pairs, kept in locals, with non-finite values sent to a slower path.
func (r *partial) floats(pf, ef []float64, base, lanes uint64, tol Tolerance) {
	atol, rtol := tol.Atol, tol.Rtol
	sumAbs, sumD2, sumP2, sumE2, sumPE := r.sumAbs, r.sumD2, r.sumP2, r.sumE2, r.sumPE
	mismatches := r.mismatches
	maxAbs := r.maxAbs
	if !r.hasMax {
		maxAbs = -1 // the first finite pair sets it
	}
	if !r.hasFirst && len(pf) > 0 {
		r.pFirst, r.eFirst, r.hasFirst = pf[0], ef[0], true
	}
	// Whether a side varies: any bits differing from its first value, folded
	// without branches (a -0 among zeros counts; it changes no verdict).
	p0, e0 := math.Float64bits(r.pFirst), math.Float64bits(r.eFirst)
	var pDiff, eDiff uint64
	ef = ef[:len(pf)]
	for i, pv := range pf {
		ev := ef[i]
		d := ev - pv
		if d-d != 0 { // NaN or Inf on a side (Inf - Inf is NaN too)
			r.mismatches = mismatches
			r.nonFinitePair(pv, ev, base+uint64(i)/lanes, lanes)
			mismatches = r.mismatches
			continue
		}
		ad := math.Abs(d)
		sumAbs += ad
		sumD2 += d * d
		sumP2 += pv * pv
		sumE2 += ev * ev
		sumPE += pv * ev
		// Whether an element is outside the tolerance is as good as random
		// in a fine-tuned tensor: count it without a branch to mispredict.
		var outside uint64
		if ad > atol+rtol*math.Abs(pv) {
			outside = 1
		}
		mismatches += outside
		if ad > maxAbs {
			maxAbs = ad
			r.maxIdx, r.maxP, r.maxE, r.hasMax = base+uint64(i)/lanes, pv, ev, true
		}
		pDiff |= math.Float64bits(pv) ^ p0
		eDiff |= math.Float64bits(ev) ^ e0
	}
	r.sumAbs, r.sumD2, r.sumP2, r.sumE2, r.sumPE = sumAbs, sumD2, sumP2, sumE2, sumPE
	r.mismatches, r.maxAbs = mismatches, max(maxAbs, 0)
	r.pVaries = r.pVaries || pDiff != 0
	r.eVaries = r.eVaries || eDiff != 0
}

// nonFinitePair handles a pair where a side is NaN or infinite: equal when
// both are NaN or both the same infinity, else a mismatch.
func (r *partial) nonFinitePair(pv, ev float64, idx, lanes uint64) {
	pFinite := pv-pv == 0
	eFinite := ev-ev == 0
	if pFinite && !eFinite {
		r.nonfinite++
	}
	if ev == pv || (math.IsNaN(pv) && math.IsNaN(ev)) {
		return
	}
	r.mismatches++
	if !r.hasNaN {
		r.hasNaN, r.nanIdx = true, idx
	}
}

// ints compares integers exactly (I64 and U64 beyond 2^53 included); the
// statistics use their float64 values.
func (r *partial) ints(pd, ed safetensors.DType, p, e []byte, pf, ef []float64, base uint64) {
	psz, esz := pd.Bits()/8, ed.Bits()/8
	exact := uint64(0)
	for i := range pf {
		pn, pm := safetensors.DecodeInt(pd, p[i*psz:])
		en, em := safetensors.DecodeInt(ed, e[i*esz:])
		if pn != en || pm != em {
			exact++
		}
	}
	before := r.mismatches
	r.floats(pf, ef, base, 1, Tolerance{})
	r.mismatches = before + exact
}

// merge adds r, the statistics of the elements that follow t's.
func (t *partial) merge(r partial) {
	t.n += r.n
	t.mismatches += r.mismatches
	t.nonfinite += r.nonfinite
	t.sumAbs += r.sumAbs
	t.sumD2 += r.sumD2
	t.sumP2 += r.sumP2
	t.sumE2 += r.sumE2
	t.sumPE += r.sumPE
	if r.hasMax && (!t.hasMax || r.maxAbs > t.maxAbs) {
		t.maxAbs, t.maxIdx, t.maxP, t.maxE, t.hasMax = r.maxAbs, r.maxIdx, r.maxP, r.maxE, true
	}
	if r.hasNaN && !t.hasNaN {
		t.hasNaN, t.nanIdx = true, r.nanIdx
	}
	if r.hasFirst {
		if !t.hasFirst {
			t.pFirst, t.eFirst, t.hasFirst = r.pFirst, r.eFirst, true
		}
		t.pVaries = t.pVaries || r.pVaries || r.pFirst != t.pFirst
		t.eVaries = t.eVaries || r.eVaries || r.eFirst != t.eFirst
	}
	t.bitDiff = t.bitDiff || r.bitDiff
}

// finish merges a comparison's partials into its statistics.
func (c *comparison) finish() {
	var t partial
	for _, r := range c.parts {
		t.merge(r)
	}
	s := &c.stats
	s.Mismatches = t.mismatches
	s.NonFinite = t.nonfinite
	s.BitIdentical = !t.bitDiff && c.pub.t.DType == c.exp.t.DType
	lanes := float64(c.pub.t.DType.Lanes())
	s.MeanAbsDiff = jsonFloat(t.sumAbs / max(float64(t.n)*lanes, 1))
	s.MaxAbsDiff = jsonFloat(t.maxAbs)
	if t.hasMax {
		s.MaxAt = unravel(t.maxIdx, c.pub.t.Shape)
		s.PublishedAt, s.ExportedAt = jsonFloat(t.maxP), jsonFloat(t.maxE)
	}
	if t.hasNaN {
		s.worstNaN = unravel(t.nanIdx, c.pub.t.Shape)
	}
	s.RelL2 = jsonFloat(math.Sqrt(t.sumD2) / math.Sqrt(t.sumP2))
	if t.sumD2 == 0 {
		s.RelL2 = 0
	}
	s.Cosine = jsonFloat(t.sumPE / (math.Sqrt(t.sumP2) * math.Sqrt(t.sumE2)))
	s.constant = !(t.pVaries && t.eVaries)
}

// unravel turns a row-major flat index into coordinates.
func unravel(i uint64, shape []uint64) []uint64 {
	at := make([]uint64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			at[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return at
}

// topChanges returns the n compared tensors that changed most, by relative L2.
func topChanges(tensors []TensorStats, n int) []TensorStats {
	var changed []TensorStats
	for _, t := range tensors {
		if t.Skipped == "" && !t.BitIdentical && (t.MaxAbsDiff > 0 || t.Mismatches > 0) {
			changed = append(changed, t)
		}
	}
	slices.SortStableFunc(changed, func(a, b TensorStats) int {
		return cmpNaNLast(float64(b.RelL2), float64(a.RelL2))
	})
	return changed[:min(n, len(changed))]
}

func cmpNaNLast(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return -1
	case math.IsNaN(b):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Summary is the one-line text summary of a value comparison.
func (v *ValueReport) Summary() string {
	var parts []string
	for _, p := range []struct {
		n    int
		text string
	}{{v.BitIdentical, "bit-identical"}, {v.Equal, "equal values"}, {v.WithinTolerance, "within tolerance"},
		{v.Mismatched, "outside tolerance"}, {v.Skipped, "skipped"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.text))
		}
	}
	s := fmt.Sprintf("%d compared", v.Compared)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if top := topChanges(v.Tensors, 1); len(top) > 0 {
		s += fmt.Sprintf("; largest change %s rel L2 at %s", fmtFloat(float64(top[0].RelL2)), top[0].Key)
	}
	return s
}
