package safetensors

import (
	"hash/maphash"
	"math/bits"
)

// A nameIndex finds a file's tensors by name: an open-addressing table of
// positions in the tensor list, 8 bytes or less a tensor where a map of
// names takes about 40, which for a header of a million tensors is tens
// of MB.
type nameIndex struct {
	seed  maphash.Seed
	slots []int32 // position + 1; 0 is an empty slot
}

// newNameIndex makes an index for up to n tensors, at most half full.
func newNameIndex(n int) nameIndex {
	size := 1 << bits.Len(uint(max(2*n-1, 1))) // a power of two >= 2n
	return nameIndex{seed: maphash.MakeSeed(), slots: make([]int32, size)}
}

// find returns the position of the tensor named name in tensors and true,
// or the empty slot where it would go and false.
func (x nameIndex) find(tensors []*Tensor, name string) (pos int, slot int, ok bool) {
	mask := len(x.slots) - 1
	for i := int(maphash.String(x.seed, name)) & mask; ; i = (i + 1) & mask {
		p := int(x.slots[i]) - 1
		if p < 0 {
			return 0, i, false
		}
		if tensors[p].Name == name {
			return p, i, true
		}
	}
}

// lookup returns the position of the tensor named name, or false.
func (x nameIndex) lookup(tensors []*Tensor, name string) (int, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	p, _, ok := x.find(tensors, name)
	return p, ok
}
