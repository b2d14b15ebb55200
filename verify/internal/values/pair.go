package values

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Tolerance is how far an exported value may be from the published one p:
// |e − p| ≤ Atol + Rtol·|p|. The zero Tolerance is exact equality.
type Tolerance struct {
	Atol, Rtol float64
}

// A Segment is bytes [Offset, Offset+Length) of the reader File (an index
// into the readers given to Run): a piece of a logical tensor's bytes.
type Segment struct {
	File   int
	Offset uint64
	Length uint64
	// Transposed says the segment holds whole rows of the operand (of its
	// last dimension) stored as their transpose, [cols, rows]: a tile of
	// attn_k_b in DeepSeek's kv_b_proj (segtiles.go). Only a plain operand
	// read as it comes has such segments.
	Transposed bool
}

// An Operand is one side of a pair: a logical tensor's dtype and shape, and
// the segments that hold its bytes in row-major order; or, for a quantized
// tensor, its codec and the segments of each of the codec's parts.
type Operand struct {
	DType    safetensors.DType
	Shape    []uint64
	Segments []Segment
	// Transposed: the segments hold the elements with the last two
	// dimensions swapped; the logical tensor is their transpose.
	Transposed bool
	// Interleave, if set, says the segments (for a codec operand, its one
	// part's) hold len(Interleave) streams one after the other, each of the
	// same number of units, way w's units Interleave[w] bytes; the
	// operand's bytes are these streams a unit each in turn (interleave.go).
	// A transposed operand's interleave is of the stored bytes.
	Interleave []uint64
	il         *interleaving
	cum        []uint64 // start of each segment in the logical bytes, built on first use

	// Codec, if set, is the operand's encoding in place of DType and
	// Segments: Parts[i] holds the segments of the codec's part i (the
	// data, the scales…) in its byte order. The codec decodes the tensor
	// matrix by matrix (the last two dimensions; a 1-D tensor is one row),
	// each part holding the matrices one after the other, and the operand
	// compares as the F32 tensor it decodes to. A Transposed codec
	// operand's codec decodes the transpose of each logical matrix, as
	// stored: the codec must be a ColumnBander.
	Codec quant.Codec
	Parts [][]Segment
	// Steps, if set, says the codec's steps (see Stepper) when the codec
	// itself does not implement Stepper.
	Steps    Stepper
	partCum  [][]uint64 // cum of each part
	partSize []uint64   // bytes of each part a matrix
}

// Elements is how many elements the logical tensor holds.
func (o *Operand) Elements() uint64 {
	n, _ := safetensors.TensorInfo{Shape: o.Shape}.NumElements()
	return n
}

// Size is the logical tensor's size in bytes: for a codec operand, the
// bytes of all its parts.
func (o *Operand) Size() uint64 {
	if o.Codec != nil {
		var n uint64
		for _, segs := range o.Parts {
			n += segmentsLength(segs)
		}
		return n
	}
	return o.DType.Bytes(o.Elements())
}

func (o *Operand) elemBytes() uint64 { return uint64(o.kernelDType().Bits() / 8) }

// A Pair is two logical tensors of one shape compared element by element;
// Run fills in its Stats.
type Pair struct {
	// Name names the pair in errors (the tensor's key); the engine does
	// not otherwise use it.
	Name                string
	Published, Exported Operand
	Tolerance           Tolerance
	// Columns asks for Stats.Columns, the sums per column (see
	// ColumnStats).
	Columns bool
	// RowWeights, with Columns, asks for Stats.Rows too, the published
	// side's column j weighted by RowWeights[j] (see RowStats); it needs
	// one weight per column.
	RowWeights []float64
	Stats      Stats

	fast bool // an exact check without decoding exists
	// stepper holds the codec sides' Steppers when every codec side has
	// one: the run then measures StepStats.
	stepper   [2]Stepper
	stepParts []stepPartial
	columns   *columnMerge
	codec     bool // a side has a codec
	blocks    blocking

	// rounding is cleared when a block of a coarser published dtype is not
	// what its export rounds to (see roundsTo).
	rounding atomic.Bool

	mu        sync.Mutex
	parts     []partial // by block, allocated at the first block done
	exact     []bool    // blocks found exact without statistics
	dirty     bool
	remaining atomic.Int64
}

// Stats are the numbers of a compared pair. A codec side counts as the F32
// tensor it decodes to: BitIdentical, for one, means the decoded values
// are (or, for two operands of one codec, the bytes are).
type Stats struct {
	// Mismatches counts elements outside the tolerance.
	Mismatches   uint64
	BitIdentical bool
	// MaxAbsDiff is the largest |e − p| over finite pairs, at MaxAt
	// (coordinates; nil when no pair is finite), where the sides hold
	// PublishedAt and ExportedAt (NaN when MaxAt is nil).
	MaxAbsDiff              float64
	MaxAt                   []uint64
	PublishedAt, ExportedAt float64
	MeanAbsDiff             float64
	// RelL2 is ‖e − p‖ / ‖p‖ and Cosine the cosine similarity, over finite
	// pairs; NaN where undefined (a zero tensor).
	RelL2, Cosine float64
	// NonFinite counts exported NaN or Inf where the published value is
	// finite; NonFiniteAt is the first element where one side is NaN or
	// Inf and the other is not the same (nil: none).
	NonFinite   uint64
	NonFiniteAt []uint64
	// Constant is set when either side holds one value throughout.
	Constant bool
	// WithinRounding is set when the published dtype is BF16 or F16, the
	// export F32, and every exported value rounds to the published one:
	// the differences are no more than the published dtype's rounding.
	WithinRounding bool
	// Steps, set when every codec side says its steps (see Stepper), are
	// the differences measured against them.
	Steps *StepStats
	// Columns, set when the pair asked for them, are its sums per column.
	Columns *ColumnStats
	// Rows, set when the pair asked for them, are its sums per row.
	Rows *RowStats
}

// Options bound a run's concurrency.
type Options struct {
	// Workers is how many goroutines compare filled blocks; 0 means
	// GOMAXPROCS.
	Workers int
	// ReadAhead is how many blocks are read at once, ahead of the
	// workers; 0 means 4.
	ReadAhead int
	// Progress, if set, is called as the work advances with the bytes read
	// and the bytes to read in all. It is called from several goroutines.
	Progress func(done, total int64)
}

// Run compares every pair, reading the segments' bytes from readers into
// bounded, reused buffers on all cores, and fills in each pair's Stats. It
// returns the bytes read; ctx stops it between blocks.
func Run(ctx context.Context, readers []io.ReaderAt, pairs []*Pair, opt Options) (int64, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	readAhead := opt.ReadAhead
	if readAhead <= 0 {
		readAhead = 4
	}
	for i, p := range pairs {
		p.Stats = Stats{}
		for _, o := range [2]*Operand{&p.Published, &p.Exported} {
			if err := o.prepareInterleave(); err != nil { // interleave.go
				return 0, fmt.Errorf("pair %d: %w", i, err)
			}
		}
		if err := p.prepareTiled(); err != nil { // segtiles.go
			return 0, fmt.Errorf("pair %d: %w", i, err)
		}
		p.codec = p.Published.Codec != nil || p.Exported.Codec != nil
		if p.codec {
			if err := p.prepareCodecs(); err != nil {
				return 0, fmt.Errorf("pair %d: %w", i, err)
			}
		}
		pd, ed := p.Published.kernelDType(), p.Exported.kernelDType()
		p.fast = fastExact(pd, ed)
		p.stepper = [2]Stepper{}
		if p.codec {
			p.fast = sameCodec(p.Published.Codec, p.Exported.Codec) && p.Published.Transposed == p.Exported.Transposed
			if st, ok := p.steppers(); ok {
				p.stepper = st
			}
		}
		p.rounding.Store(coarser(pd, ed))
		if p.columns = nil; p.Columns {
			p.fast = false // every block decoded: its columns are summed
		}
	}
	return run(ctx, readers, pairs, workers, readAhead, opt.Progress)
}
