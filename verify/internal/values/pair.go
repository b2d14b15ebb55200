package values

import (
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

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
}

// An Operand is one side of a pair: a logical tensor's dtype and shape, and
// the segments that hold its bytes in row-major order.
type Operand struct {
	DType    safetensors.DType
	Shape    []uint64
	Segments []Segment
	// Transposed: the segments hold the elements with the last two
	// dimensions swapped; the logical tensor is their transpose.
	Transposed bool
	cum        []uint64 // start of each segment in the logical bytes, built on first use
}

// Elements is how many elements the logical tensor holds.
func (o *Operand) Elements() uint64 {
	n, _ := safetensors.TensorInfo{Shape: o.Shape}.NumElements()
	return n
}

// Size is the logical tensor's size in bytes.
func (o *Operand) Size() uint64 {
	return o.Elements() * uint64(o.DType.Bits()) / 8
}

func (o *Operand) elemBytes() uint64 { return uint64(o.DType.Bits() / 8) }

// A Pair is two logical tensors of one shape compared element by element;
// Run fills in its Stats.
type Pair struct {
	Published, Exported Operand
	Tolerance           Tolerance
	Stats               Stats

	fast   bool // an exact check without decoding exists
	blocks blocking

	// rounding is cleared when a block of a coarser published dtype is not
	// what its export rounds to (see roundsTo).
	rounding atomic.Bool

	mu        sync.Mutex
	parts     []partial // by block, allocated at the first block done
	exact     []bool    // blocks found exact without statistics
	dirty     bool
	remaining atomic.Int64
}

// Stats are the numbers of a compared pair.
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
	for _, p := range pairs {
		p.Stats = Stats{}
		p.fast = fastExact(p.Published.DType, p.Exported.DType)
		p.rounding.Store(coarser(p.Published.DType, p.Exported.DType))
	}
	return run(ctx, readers, pairs, workers, readAhead, opt.Progress)
}
