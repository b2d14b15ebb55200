package values

import (
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestCodecBandRows: a GPTQ side (qweight [in/8, out]: a band of logical
// rows is a piece of every stored row, and the reads coalesce through the
// gaps) gets bands of whole matrices where they fit maxStridedBlock
// blocks, so each stored row is read once; a larger matrix is cut at that
// bound, never beyond; a codec stored by logical rows keeps its band.
func TestCodecBandRows(t *testing.T) {
	gptq, err := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.F16})
	if err != nil {
		t.Fatal(err)
	}
	q8, _ := quant.GGML(tensorfile.Q8_0)
	limit := maxStridedBlock * blockElems
	for _, c := range []struct {
		name       string
		codec      quant.Codec
		rows, cols uint64
		want       uint64
	}{
		{"q_proj", gptq, 2048, 1024, 2048},
		{"gate_proj", gptq, 3072, 1024, 3072},
		{"down_proj", gptq, 1024, 3072, 1024},
		{"larger than the bound", gptq, 4 * limit / 1024, 1024, limit / 1024},
		{"rows stored whole", q8, 3072, 1024, blockElems / 1024},
	} {
		p := &Pair{Exported: Operand{Codec: c.codec, Shape: []uint64{c.rows, c.cols}}}
		if got := codecBandRows(p, blockElems/c.cols, c.rows, c.cols); got != c.want {
			t.Errorf("%s [%d, %d]: %d rows a band, want %d", c.name, c.rows, c.cols, got, c.want)
		}
	}
}
