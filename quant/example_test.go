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
