package values

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkColumnSums times the column (and row) sums of a sub-chunked
// piece, BF16 published against decoded F32 values, in ns an element.
func BenchmarkColumnSums(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cols := range []uint64{1024, 3072} {
		for _, rows := range []bool{false, true} {
			pv, ev := make([]float64, subChunkElems), make([]float64, subChunkElems)
			for i := range pv {
				pv[i], ev[i] = rng.NormFloat64(), rng.NormFloat64()
			}
			pb, eb := encode(safetensors.BF16, pv), encode(safetensors.F32, ev)
			p := &Pair{Columns: true, Published: Operand{Shape: []uint64{64, cols}}}
			if rows {
				p.RowWeights = make([]float64, cols)
				for j := range p.RowWeights {
					p.RowWeights[j] = 1 + rng.Float64()
				}
			}
			var cb columnBuffers
			b.Run(fmt.Sprintf("cols=%d/rows=%v", cols, rows), func(b *testing.B) {
				s := p.blockColumns(0, subChunkElems)
				for b.Loop() {
					cb.add(s, p, 0, subChunkElems, safetensors.BF16, safetensors.F32, pb, eb)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/subChunkElems, "ns/elem")
			})
		}
	}
}
