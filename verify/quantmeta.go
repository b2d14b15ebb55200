package verify

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/quant"
)

// The few facts of a quantized checkpoint that live in the data section
// rather than the header: compressed-tensors' weight_shape (an I64 tensor,
// the unpacked shape) and bitsandbytes' quant_state (a U8 tensor of JSON:
// quant type, block size, dtype, shape). A codec that needs one is a
// quant.Resolver; its meta part is read here, and only it: each at most
// quant.MaxMetaBytes, at most maxMetaTotal bytes for the whole checkpoint
// (a hostile header naming a million quant states costs that much and no
// more), the reads coalesced so that neighbouring meta tensors are one
// ranged read.

// maxMetaTotal bounds the meta bytes read for one checkpoint, gaps between
// coalesced neighbours included: a 600B model's quant states are a few
// tens of megabytes.
const maxMetaTotal = 64 << 20

// metaGap is the largest gap between two meta tensors read as one: less
// than a second request costs on a remote source.
const metaGap = 64 << 10

// A metaWant is one meta part to read: n bytes at off of r.
type metaWant struct {
	r      io.ReaderAt
	off, n uint64
}

// readMetas reads each want's bytes, coalescing wants of one reader whose
// gap is at most metaGap. A want over quant.MaxMetaBytes, one past the
// budget, or one whose read failed gets nil and its reason in why.
func readMetas(wants []metaWant) (got [][]byte, why []string) {
	got, why = make([][]byte, len(wants)), make([]string, len(wants))
	order := make([]int, 0, len(wants))
	for i, w := range wants {
		if w.n > quant.MaxMetaBytes {
			why[i] = fmt.Sprintf("%s, more than the %s read of a layout tensor", textfmt.Plural(int(min(w.n, 1<<62)), "byte"), textfmt.Plural(quant.MaxMetaBytes, "byte"))
			continue
		}
		if w.off > math.MaxInt64-quant.MaxMetaBytes {
			why[i] = fmt.Sprintf("at byte %d, past any file", w.off)
			continue
		}
		order = append(order, i)
	}
	// Group by reader in the order first met, then by offset.
	first := map[io.ReaderAt]int{}
	for _, i := range order {
		if _, ok := first[wants[i].r]; !ok {
			first[wants[i].r] = len(first)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(first[wants[a].r], first[wants[b].r]); c != 0 {
			return c
		}
		return cmp.Compare(wants[a].off, wants[b].off)
	})
	budget := uint64(maxMetaTotal)
	for k := 0; k < len(order); {
		lo, hi := wants[order[k]].off, wants[order[k]].off+wants[order[k]].n
		j := k + 1
		for ; j < len(order); j++ {
			w := wants[order[j]]
			if w.r != wants[order[k]].r || w.off > hi+metaGap || max(hi, w.off+w.n)-lo > 2*quant.MaxMetaBytes {
				break
			}
			hi = max(hi, w.off+w.n)
		}
		if hi-lo > budget {
			for _, i := range order[k:] {
				why[i] = fmt.Sprintf("past the %s read of layout tensors for a checkpoint", textfmt.Plural(maxMetaTotal, "byte"))
			}
			return got, why
		}
		budget -= hi - lo
		buf := make([]byte, hi-lo)
		_, err := wants[order[k]].r.ReadAt(buf, int64(lo))
		for _, i := range order[k:j] {
			if err != nil {
				why[i] = err.Error()
				continue
			}
			got[i] = buf[wants[i].off-lo : wants[i].off-lo+wants[i].n]
		}
		k = j
	}
	return got, why
}

// metaWantOf is where a source's tensor lies for readMetas; ok is false
// when the tensor cannot be read.
func metaWantOf(src Source, off, n uint64) (metaWant, bool) {
	if src.Shard == nil || src.Shard.File == nil || src.Err != nil || src.Tensor == nil {
		return metaWant{}, false
	}
	w := metaWant{r: src.Shard.Data, off: src.Tensor.DataOffsets[0] + off, n: n}
	if h := src.Shard.Safetensors(); h != nil {
		w.r = h.DataSection()
	}
	return w, w.r != nil
}

// resolveBindings reads the meta part of every binding whose codec is a
// quant.Resolver and replaces its codec and shape by what the part says.
// A binding it cannot resolve keeps its Resolver and nil shape, and the
// reason is in the returned map, by weight.
func resolveBindings(bindings []quant.Binding, srcs []Source) map[string]string {
	byName := make(map[string]int, len(srcs))
	for i, s := range srcs {
		if _, dup := byName[s.Tensor.Name]; !dup {
			byName[s.Tensor.Name] = i
		}
	}
	var wants []metaWant
	var which []int
	failed := map[string]string{}
	for i, b := range bindings {
		r, ok := b.Codec.(quant.Resolver)
		if !ok || r.MetaPart() >= len(b.Parts) || b.Parts[r.MetaPart()] == "" {
			continue
		}
		k, ok := byName[b.Parts[r.MetaPart()]]
		if !ok {
			continue
		}
		t := srcs[k].Tensor
		w, ok := metaWantOf(srcs[k], 0, t.DataOffsets[1]-t.DataOffsets[0])
		if !ok {
			failed[b.Weight] = "its " + textfmt.Quote(t.Name) + " cannot be read"
			continue
		}
		wants, which = append(wants, w), append(which, i)
	}
	got, why := readMetas(wants)
	for k, i := range which {
		b := &bindings[i]
		if got[k] == nil {
			failed[b.Weight] = why[k]
			continue
		}
		if err := resolveBinding(b, got[k]); err != nil {
			failed[b.Weight] = err.Error()
		}
	}
	return failed
}

// resolveBinding resolves one binding from its meta part's bytes.
func resolveBinding(b *quant.Binding, meta []byte) error {
	c, shape, err := b.Codec.(quant.Resolver).Resolve(meta)
	if err != nil {
		return err
	}
	if len(c.Parts()) != len(b.Parts) {
		return fmt.Errorf("%s: %d parts, the binding %d", c, len(c.Parts()), len(b.Parts))
	}
	b.Codec, b.Shape = c, shape
	return nil
}

// resolveView resolves the view's quantized weights whose codec reads a
// meta part (see resolveBindings), through the view's sources. A weight
// that does not resolve is left as bound: it is not compared.
func resolveView(v *adapter.View, srcs []Source) {
	var wants []metaWant
	var which []int
	for i, t := range v.Tensors {
		q := t.Quant
		if q == nil {
			continue
		}
		r, ok := q.Codec.(quant.Resolver)
		if !ok || r.MetaPart() >= len(q.Parts) {
			continue
		}
		k := slices.IndexFunc(q.Companions, func(c adapter.Tensor) bool { return c.Name == q.Parts[r.MetaPart()] })
		if k < 0 || len(q.Companions[k].Segments) != 1 {
			continue
		}
		seg := q.Companions[k].Segments[0]
		if seg.Source < 0 || seg.Source >= len(srcs) {
			continue
		}
		if w, ok := metaWantOf(srcs[seg.Source], seg.Offset, seg.Length); ok {
			wants, which = append(wants, w), append(which, i)
		}
	}
	got, _ := readMetas(wants)
	for k, i := range which {
		q := v.Tensors[i].Quant
		if got[k] == nil {
			continue
		}
		b := quant.Binding{Codec: q.Codec, Parts: q.Parts}
		if resolveBinding(&b, got[k]) == nil {
			resolved := *q // the view's Quantized may be shared with an earlier judgement
			resolved.Codec, resolved.Shape = b.Codec, b.Shape
			v.Tensors[i].Quant = &resolved
		}
	}
}
