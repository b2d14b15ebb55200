package torchsave

import "github.com/ckptcheck/ckptcheck/tensorfile"

// A Piece is a byte range of a file holding a run of a tensor's elements:
// a tensor with Pieces holds its elements in them, in row-major order.
type Piece struct {
	// File is the relative path of the DCP item file the piece is in; ""
	// for the tensor's own file.
	File           string
	Offset, Length uint64
}

// The pieces of strided views and of chunked DCP tensors are bounded,
// whatever the shapes and strides in the pickle say: maxPieces a tensor,
// maxFilePieces a file's (or a DCP step's) tensors together, and an
// overlapping view (a stride-0 expand) may read its storage's elements at
// most maxOverlap times over. Past a bound the tensor is not read (a
// NonContiguous or DCPChunked error says why).
const (
	maxPieces     = 1 << 20
	maxFilePieces = 1 << 22
	maxOverlap    = 64
)

// transposedView reports whether a strided view is the transpose of a
// contiguous range (of a batch of matrices): its last two dimensions
// swapped, the others row-major over whole matrices. The value engine
// reads such a tensor as tiles of one range.
func transposedView(shape, stride []uint64) bool {
	n := len(shape)
	if n < 2 {
		return false
	}
	a, b := shape[n-2], shape[n-1]
	if a < 2 || b < 2 || stride[n-2] != 1 || stride[n-1] != a {
		return false
	}
	want := a * b // no overflow: span has counted the view's elements
	for d := n - 3; d >= 0; d-- {
		if shape[d] != 1 && stride[d] != want {
			return false
		}
		want *= shape[d]
	}
	return true
}

// viewRuns cuts a strided view at element offset of its storage into the
// runs of storage elements it reads, in row-major order: the innermost
// dimensions that are contiguous make one run, the outer ones are counted
// over. It calls emit for each run (coalescing adjacent ones) unless
// there would be more than limit; count is how many there are before
// coalescing. The view must lie within its storage (see span).
func viewRuns(shape, stride []uint64, offset uint64, limit uint64, emit func(off, n uint64)) (count uint64, ok bool) {
	numel, ok := tensorfile.NumElements(shape)
	if !ok {
		return 0, false
	}
	if numel == 0 {
		return 0, true
	}
	run, k := uint64(1), len(shape)
	for ; k > 0; k-- {
		d := k - 1
		if shape[d] != 1 && stride[d] != run {
			break
		}
		run *= shape[d]
	}
	count = numel / run
	if count > limit {
		return count, false
	}
	var outer []int // the outer dimensions counted over
	for d := range k {
		if shape[d] != 1 {
			outer = append(outer, d)
		}
	}
	idx := make([]uint64, len(outer))
	pendOff, pendN := offset, uint64(0)
	pos := offset
	for range count {
		if pendN > 0 && pendOff+pendN == pos {
			pendN += run
		} else {
			if pendN > 0 {
				emit(pendOff, pendN)
			}
			pendOff, pendN = pos, run
		}
		// Advance the odometer over the outer dimensions.
		for j := len(outer) - 1; j >= 0; j-- {
			d := outer[j]
			idx[j]++
			pos += stride[d]
			if idx[j] < shape[d] {
				break
			}
			pos -= idx[j] * stride[d]
			idx[j] = 0
		}
	}
	emit(pendOff, pendN)
	return count, true
}
