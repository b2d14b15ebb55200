package verify

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// nd is a small dense F32 tensor for building framework exports the way
// their upstream code does, one torch operation at a time (view,
// transpose, cat, stack, chunk), independently of the adapter rules under
// test. Every operation makes a new tensor.
type nd struct {
	shape []int
	v     []float32
}

func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// generate makes a tensor of shape whose element at idx is f(idx).
func generate(shape []int, f func(idx []int) float32) nd {
	t := nd{shape: slices.Clone(shape), v: make([]float32, size(shape))}
	idx := make([]int, len(shape))
	for i := range t.v {
		t.v[i] = f(idx)
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return t
}

func (t nd) at(idx []int) float32 {
	off := 0
	for d, i := range idx {
		off = off*t.shape[d] + i
	}
	return t.v[off]
}

func (t nd) dim(d int) int {
	if d < 0 {
		d += len(t.shape)
	}
	return d
}

// view is torch's view (and reshape, on a contiguous tensor): the same
// elements in the same order under another shape; one -1 is inferred.
func (t nd) view(shape ...int) nd {
	shape = slices.Clone(shape)
	if i := slices.Index(shape, -1); i >= 0 {
		shape[i] = 1
		shape[i] = len(t.v) / size(shape)
	}
	if size(shape) != len(t.v) {
		panic(fmt.Sprintf("view %v of %v", shape, t.shape))
	}
	return nd{shape: shape, v: t.v}
}

// transpose is torch's transpose(a, b), made contiguous.
func (t nd) transpose(a, b int) nd {
	a, b = t.dim(a), t.dim(b)
	shape := slices.Clone(t.shape)
	shape[a], shape[b] = shape[b], shape[a]
	src := make([]int, len(shape))
	return generate(shape, func(idx []int) float32 {
		copy(src, idx)
		src[a], src[b] = idx[b], idx[a]
		return t.at(src)
	})
}

// narrow is t[..., start:start+n, ...] along dim.
func (t nd) narrow(dim, start, n int) nd {
	dim = t.dim(dim)
	shape := slices.Clone(t.shape)
	shape[dim] = n
	src := make([]int, len(shape))
	return generate(shape, func(idx []int) float32 {
		copy(src, idx)
		src[dim] += start
		return t.at(src)
	})
}

// chunk is torch's chunk(n, dim) for n dividing the dimension.
func (t nd) chunk(n, dim int) []nd {
	d := t.dim(dim)
	out := make([]nd, n)
	for i := range out {
		out[i] = t.narrow(d, i*t.shape[d]/n, t.shape[d]/n)
	}
	return out
}

// split is torch's split(sizes, dim).
func (t nd) split(sizes []int, dim int) []nd {
	var out []nd
	at := 0
	for _, s := range sizes {
		out = append(out, t.narrow(dim, at, s))
		at += s
	}
	return out
}

// cat is torch's cat(ts, dim).
func cat(dim int, ts ...nd) nd {
	dim = ts[0].dim(dim)
	shape := slices.Clone(ts[0].shape)
	shape[dim] = 0
	for _, t := range ts {
		shape[dim] += t.shape[dim]
	}
	src := make([]int, len(shape))
	return generate(shape, func(idx []int) float32 {
		copy(src, idx)
		for _, t := range ts {
			if src[dim] < t.shape[dim] {
				return t.at(src)
			}
			src[dim] -= t.shape[dim]
		}
		panic("cat")
	})
}

// stackND is torch's stack(ts, dim=0).
func stackND(ts ...nd) nd {
	parts := make([]nd, len(ts))
	for i, t := range ts {
		parts[i] = t.view(append([]int{1}, t.shape...)...)
	}
	return cat(0, parts...)
}

// tensor encodes t as an F32 fixture tensor named name.
func (t nd) tensor(name string) fixture.Tensor {
	b := make([]byte, 4*len(t.v))
	for i, x := range t.v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	shape := make([]uint64, len(t.shape))
	for i, d := range t.shape {
		shape[i] = uint64(d)
	}
	return fixture.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: b}
}

// An hfModel is a published checkpoint in Hugging Face names whose
// elements are an arange over the whole model (1, 2, 3, ... in the order
// the specs list the tensors; exact in F32 up to 2^24), so that every
// element's origin is visible and any misplaced one differs.
type hfModel struct {
	order  []string
	t      map[string]nd
	config map[string]any
	next   float32
}

// add appends a tensor of the given shape, filled with the next values.
func (m *hfModel) add(name string, shape ...int) {
	if m.t == nil {
		m.t, m.next = map[string]nd{}, 1
	}
	if _, dup := m.t[name]; dup {
		panic("two tensors named " + name)
	}
	m.order = append(m.order, name)
	m.t[name] = generate(shape, func([]int) float32 { m.next++; return m.next - 1 })
}

// clone returns a copy an export builder may take tensors from.
func (m *hfModel) clone() *hfModel {
	c := &hfModel{order: slices.Clone(m.order), t: map[string]nd{}, config: m.config, next: m.next}
	for k, v := range m.t {
		c.t[k] = v
	}
	return c
}

// take removes a published tensor, so that a builder converts each once.
func (m *hfModel) take(name string) nd {
	t, ok := m.t[name]
	if !ok {
		panic("the published model has no " + name)
	}
	delete(m.t, name)
	return t
}

// rest takes the tensors no builder took, unchanged, in order.
func (m *hfModel) rest() []fixture.Tensor {
	var out []fixture.Tensor
	for _, n := range m.order {
		if t, ok := m.t[n]; ok {
			out = append(out, t.tensor(n))
			delete(m.t, n)
		}
	}
	return out
}

// done panics if a builder left published tensors unconverted.
func (m *hfModel) done(out []fixture.Tensor) []fixture.Tensor {
	if len(m.t) != 0 {
		panic(fmt.Sprint("unconverted: ", slices.Sorted(func(yield func(string) bool) {
			for k := range m.t {
				if !yield(k) {
					return
				}
			}
		})))
	}
	return out
}

func (m *hfModel) tensors() []fixture.Tensor { return m.clone().rest() }
