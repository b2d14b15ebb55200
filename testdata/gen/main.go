// Command gen writes the committed example checkpoints under testdata/:
//
//	go run ./testdata/gen [DIR]
//
// DIR defaults to testdata. The output is deterministic; a test checks that
// the committed files are what this program writes.
package main

import (
	"fmt"
	"os"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

func main() {
	dir := "testdata"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := fixture.WriteExample(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
