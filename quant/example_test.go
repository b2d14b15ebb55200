package quant_test

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func ExampleDecodeFloat64() {
	vals := make([]float64, 3)
	quant.DecodeFloat64(tensorfile.F8_E4M3, []byte{0x38, 0x7E, 0x7F}, vals)
	fmt.Println(vals)
	// Output: [1 448 NaN]
}

// A codec says which bytes a row range needs, then decodes them.
func ExampleScaledFP8() {
	c := quant.ScaledFP8{}
	d := quant.Dims{Rows: 3, Cols: 2}
	spans, err := c.Spans(d, 1, 3, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans {
		fmt.Printf("%s: bytes [%d, %d)\n", c.Parts()[s.Part].Role, s.Offset, s.Offset+s.Len)
	}
	weight := []byte{0x38, 0x40, 0x30, 0xB8, 0x7E, 0x00} // 1, 2, 0.5, -1, 448, 0
	scale := []byte{0, 0, 0, 0x3F}                       // 0.5
	parts, _ := quant.Gather([][]byte{weight, scale}, spans, nil)
	out := make([]float32, 4)
	fmt.Println(c.Decode(d, 1, 3, parts, out), out)
	// Output:
	// data: bytes [2, 6)
	// scale: bytes [0, 4)
	// <nil> [0.25 -0.5 224 0]
}
