package torchsave

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// maxGapCells bounds the work of naming a gap: cells of the grid the
// chunks' edges cut the tensor into, times chunks. Past it the gap is
// reported by its size alone.
const maxGapCells = 1 << 22

// Tiling checks that the tensor's chunks cover it exactly, as a
// tensor-parallel or FSDP save must: a DCPChunkOverlap error names the
// first two chunks that share elements and the region they share, a
// DCPChunkGap error a region no chunk covers (a shard missing its tail).
// ReadDCPMetadata has already checked each chunk lies within the tensor.
func (t *DCPTensor) Tiling() error {
	total, ok := tensorfile.NumElements(t.Shape)
	if !ok {
		return formatErr(DCPBadMetadata, DCPMetadataName, t.FQN, "shape %v has more elements than can be counted", t.Shape)
	}
	if err := t.overlap(); err != nil {
		return err
	}
	var covered uint64
	for _, c := range t.Chunks {
		v, _ := tensorfile.NumElements(c.Sizes) // within the tensor, so no overflow
		covered += v                            // no overlaps, so at most total
	}
	if covered == total {
		return nil
	}
	zero := make([]uint64, len(t.Shape))
	where := "elements"
	if cell, ok := t.gapCell(); ok {
		where = "elements " + region(cell[0], cell[1])
	}
	return formatErr(DCPChunkGap, DCPMetadataName, t.FQN, "%s of shape %s are in no chunk: the chunks cover %d of %d elements",
		where, region(zero, t.Shape), covered, total)
}

// overlap sweeps the chunks in order of their first offset, so that
// row-sharded tensors are checked in linear time.
func (t *DCPTensor) overlap() error {
	if len(t.Shape) == 0 {
		if len(t.Chunks) > 1 {
			return formatErr(DCPChunkOverlap, DCPMetadataName, t.FQN, "the scalar is in %d chunks", len(t.Chunks))
		}
		return nil
	}
	order := make([]int, 0, len(t.Chunks))
	for i, c := range t.Chunks {
		if v, _ := tensorfile.NumElements(c.Sizes); v > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Compare(t.Chunks[a].Offsets[0], t.Chunks[b].Offsets[0])
	})
	for x, i := range order {
		a := t.Chunks[i]
		for _, j := range order[x+1:] {
			b := t.Chunks[j]
			if b.Offsets[0] >= a.Offsets[0]+a.Sizes[0] {
				break
			}
			if off, size, ok := intersect(a, b); ok {
				return formatErr(DCPChunkOverlap, DCPMetadataName, t.FQN, "chunks %s and %s both hold elements %s",
					region(a.Offsets, a.Sizes), region(b.Offsets, b.Sizes), region(off, size))
			}
		}
	}
	return nil
}

// gapCell finds a cell of the grid cut by every chunk edge that no chunk
// covers, as [offsets, sizes], within maxGapCells of work.
func (t *DCPTensor) gapCell() ([2][]uint64, bool) {
	d := len(t.Shape)
	edges := make([][]uint64, d)
	cells := uint64(1)
	for k := range d {
		e := []uint64{0, t.Shape[k]}
		for _, c := range t.Chunks {
			e = append(e, c.Offsets[k], c.Offsets[k]+c.Sizes[k])
		}
		slices.Sort(e)
		edges[k] = slices.Compact(e)
		cells *= uint64(len(edges[k]) - 1)
		if hi, lo := bits.Mul64(cells, uint64(len(t.Chunks))+1); hi != 0 || lo > maxGapCells {
			return [2][]uint64{}, false
		}
	}
	idx := make([]int, d)
	off, size := make([]uint64, d), make([]uint64, d)
	for {
		empty := false
		for k := range d {
			off[k], size[k] = edges[k][idx[k]], edges[k][idx[k]+1]-edges[k][idx[k]]
			empty = empty || size[k] == 0
		}
		if !empty && !t.covers(off) {
			return [2][]uint64{off, size}, true
		}
		k := d - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < len(edges[k])-1 {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return [2][]uint64{}, false
		}
	}
}

// covers reports whether a chunk holds the element at index p.
func (t *DCPTensor) covers(p []uint64) bool {
	for _, c := range t.Chunks {
		in := true
		for k := range p {
			in = in && p[k] >= c.Offsets[k] && p[k] < c.Offsets[k]+c.Sizes[k]
		}
		if in {
			return true
		}
	}
	return false
}

// intersect is the region two chunks share, if it holds any element.
func intersect(a, b DCPChunk) (off, size []uint64, ok bool) {
	off, size = make([]uint64, len(a.Offsets)), make([]uint64, len(a.Offsets))
	for k := range a.Offsets {
		lo := max(a.Offsets[k], b.Offsets[k])
		hi := min(a.Offsets[k]+a.Sizes[k], b.Offsets[k]+b.Sizes[k])
		if hi <= lo {
			return nil, nil, false
		}
		off[k], size[k] = lo, hi-lo
	}
	return off, size, true
}
