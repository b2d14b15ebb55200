package verify

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// countingReader counts its reads and the bytes they ask for.
type countingReader struct {
	r            *bytes.Reader
	reads, bytes atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	c.bytes.Add(int64(len(p)))
	return c.r.ReadAt(p, off)
}

// TestReadMetas: neighbouring layout tensors are one read, distant ones
// two; a tensor over quant.MaxMetaBytes is not read; what is read is the
// bytes of each.
func TestReadMetas(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	r := &countingReader{r: bytes.NewReader(data)}
	wants := []metaWant{{r, 5000, 16}, {r, 100, 16}, {r, 132, 300}, {r, 900000, 16}, {r, 200, quant.MaxMetaBytes + 1}}
	got, why := readMetas(wants)
	for i, w := range wants[:4] {
		if !bytes.Equal(got[i], data[w.off:w.off+w.n]) || why[i] != "" {
			t.Errorf("want %d: %v, %q", i, got[i], why[i])
		}
	}
	if got[4] != nil || !strings.Contains(why[4], "more than") {
		t.Errorf("oversized: %d bytes, %q", len(got[4]), why[4])
	}
	if n := r.reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2 (the first three coalesced)", n)
	}
}

// zeroReader reads zeros anywhere, counting the bytes asked for.
type zeroReader struct{ bytes atomic.Int64 }

func (z *zeroReader) ReadAt(p []byte, _ int64) (int, error) {
	z.bytes.Add(int64(len(p)))
	clear(p)
	return len(p), nil
}

// TestReadMetasBudget: layout tensors past maxMetaTotal bytes for the
// checkpoint are not read, however many the header names.
func TestReadMetasBudget(t *testing.T) {
	r := &zeroReader{}
	var wants []metaWant
	for off := uint64(0); off < 2*maxMetaTotal/quant.MaxMetaBytes<<20; off += 1 << 20 { // one 64 KiB tensor a MiB: no coalescing
		wants = append(wants, metaWant{r, off, quant.MaxMetaBytes})
	}
	got, why := readMetas(wants)
	read := 0
	for i := range got {
		if got[i] != nil {
			read++
		} else if !strings.Contains(why[i], "past the") {
			t.Fatalf("%d: %q", i, why[i])
		}
	}
	if r.bytes.Load() > maxMetaTotal || read != maxMetaTotal/quant.MaxMetaBytes {
		t.Errorf("%d bytes in %d tensors read, bound %d", r.bytes.Load(), read, maxMetaTotal)
	}
}

// FuzzResolveMeta: whatever a layout tensor holds (a weight_shape, a quant
// state), resolving it and checking the binding's sizes and spans neither
// panics nor allocates by its numbers, and a resolved codec's spans stay
// within the sizes it states.
func FuzzResolveMeta(f *testing.F) {
	f.Add(uint8(0), binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 8), 64))
	f.Add(uint8(0), binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<62), 1<<62))
	f.Add(uint8(1), []byte(`{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [8, 64], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.03}`))
	f.Add(uint8(1), []byte(`{"quant_type": "fp4", "blocksize": 64, "dtype": "float16", "shape": [18446744073709551615, 3]}`))
	ct := `{"format":"pack-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":4,"type":"int","symmetric":false,"strategy":"group","group_size":32}}}}`
	layouts := []struct {
		scheme, config string
		tensors        []tensorfile.TensorInfo
	}{
		{"compressed-tensors", ct, []tensorfile.TensorInfo{{Name: "l.weight_packed", DType: tensorfile.I32, Shape: []uint64{8, 8}},
			{Name: "l.weight_scale", DType: tensorfile.BF16, Shape: []uint64{8, 2}}, {Name: "l.weight_zero_point", DType: tensorfile.I32, Shape: []uint64{1, 2}},
			{Name: "l.weight_shape", DType: tensorfile.I64, Shape: []uint64{2}}}},
		{"bitsandbytes", "", []tensorfile.TensorInfo{{Name: "l.weight", DType: tensorfile.U8, Shape: []uint64{256, 1}},
			{Name: "l.weight.absmax", DType: tensorfile.U8, Shape: []uint64{8}}, {Name: "l.weight.quant_map", DType: tensorfile.F32, Shape: []uint64{16}},
			{Name: "l.weight.nested_absmax", DType: tensorfile.F32, Shape: []uint64{1}}, {Name: "l.weight.nested_quant_map", DType: tensorfile.F32, Shape: []uint64{256}},
			{Name: "l.weight.quant_state.bitsandbytes__nf4", DType: tensorfile.U8, Shape: []uint64{96}}}},
	}
	f.Fuzz(func(t *testing.T, which uint8, meta []byte) {
		l := layouts[int(which)%len(layouts)]
		s, _ := quant.LookupScheme(l.scheme)
		b, err := s.Bind([]byte(l.config), l.tensors)
		if err != nil || len(b.Bindings) != 1 {
			t.Fatalf("%s: %v %+v", l.scheme, err, b)
		}
		bind := b.Bindings[0]
		if _, ok := bind.Codec.(quant.Resolver); !ok {
			t.Fatalf("%s: %s is no Resolver", l.scheme, bind.Codec)
		}
		if resolveBinding(&bind, meta) != nil {
			return
		}
		byName := map[string]*tensorfile.TensorInfo{}
		for i := range l.tensors {
			byName[l.tensors[i].Name] = &l.tensors[i]
		}
		checkBinding(l.scheme, quantConfigOf([]byte(l.config)), bind, byName, "")
		d, _, ok := codecDims(bind.Shape)
		if !ok || d.Rows == 0 {
			return
		}
		sizes := make([]uint64, len(bind.Codec.Parts()))
		if bind.Codec.Sizes(d, sizes) != nil {
			return
		}
		r1 := min(d.Rows, max(bind.Codec.Tile().Rows, 1))
		spans, err := bind.Codec.Spans(d, 0, r1, nil)
		for _, sp := range spans {
			if end, ok := sp.End(); err == nil && (!ok || end > sizes[sp.Part]) {
				t.Fatalf("%s: span %+v past part %d's %d bytes", bind.Codec, sp, sp.Part, sizes[sp.Part])
			}
		}
		if slices.Contains(bind.Parts, "") && len(bind.Parts) != len(bind.Codec.Parts()) {
			t.Fatalf("%s: %d names, %d parts", bind.Codec, len(bind.Parts), len(bind.Codec.Parts()))
		}
	})
}
