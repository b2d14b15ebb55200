package cpufeature_test

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/internal/cpufeature"
)

// A kernel is chosen by the set, asked once.
func ExampleX86() {
	kernel := "portable"
	if cpufeature.X86().AVX2 {
		kernel = "avx2"
	}
	fmt.Println(kernel == "portable" || kernel == "avx2")
	// Output: true
}
