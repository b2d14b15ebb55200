package safetensors

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestLargeHeaderOutlivesItsBuffer: a header large enough to be read into
// a buffer that is freed once parsed (headerBuffer) leaves names, shapes,
// metadata and duplicates intact, and the index finds every tensor.
func TestLargeHeaderOutlivesItsBuffer(t *testing.T) {
	const n = 30_000 // ~1.9 MB of header, above minMappedHeader
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt","note":"escaped \u00e9"}`)
	for i := range n {
		fmt.Fprintf(&b, `,"model.layers.%d.mlp.experts.%d.weight":{"dtype":"F32","shape":[%d,0,%d],"data_offsets":[0,0]}`, i/64, i%64, i%7, i%5+1)
	}
	b.WriteString(`,"model.layers.0.mlp.experts.0.weight":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]}}`)
	if b.Len() < 1<<20 {
		t.Fatalf("header of %d bytes is below the mapped size", b.Len())
	}
	f, err := open(lenPrefix(uint64(b.Len()), b.String()))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if len(f.Tensors) != n || len(f.Duplicates) != 1 || f.Duplicates[0] != "model.layers.0.mlp.experts.0.weight" {
		t.Fatalf("%d tensors, duplicates %q", len(f.Tensors), f.Duplicates)
	}
	if f.Metadata["format"] != "pt" || f.Metadata["note"] != "escaped é" {
		t.Errorf("metadata %q", f.Metadata)
	}
	for i, tn := range f.Tensors {
		want := fmt.Sprintf("model.layers.%d.mlp.experts.%d.weight", i/64, i%64)
		if tn.Name != want {
			t.Fatalf("tensor %d is %q, want %q", i, tn.Name, want)
		}
		if got := f.Tensor(want); got != tn {
			t.Fatalf("Tensor(%q) = %v", want, got)
		}
		if i == 0 {
			if tn.DType != BF16 || len(tn.Shape) != 1 {
				t.Errorf("the repeated name kept %s %v, want its last entry", tn.DType, tn.Shape)
			}
			continue
		}
		if len(tn.Shape) != 3 || tn.Shape[0] != uint64(i%7) || tn.Shape[2] != uint64(i%5+1) {
			t.Fatalf("tensor %d shape %v", i, tn.Shape)
		}
	}
	if f.Tensor("model.layers.0.mlp.experts.64.weight") != nil || f.Tensor("") != nil {
		t.Error("Tensor found a name the header does not have")
	}
}

// TestChunksRun: a run that outgrows its chunk moves whole to the next,
// and runs returned earlier keep their elements.
func TestChunksRun(t *testing.T) {
	var c chunks[uint64]
	var runs [][]uint64
	for r := range 200 {
		start := c.mark()
		for v := range r % 40 {
			start = c.push(start, uint64(r*1000+v))
		}
		runs = append(runs, c.run(start))
	}
	for r, run := range runs {
		if len(run) != r%40 || cap(run) != len(run) {
			t.Fatalf("run %d: len %d cap %d", r, len(run), cap(run))
		}
		for v, x := range run {
			if x != uint64(r*1000+v) {
				t.Fatalf("run %d element %d is %d", r, v, x)
			}
		}
	}
}
