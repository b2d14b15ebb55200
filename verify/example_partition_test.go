package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/verify"
)

// Three runs compare a third of the values each; their JSON reports merge
// into the report of one run.
func ExampleMerge() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir) // a published checkpoint and an F32 export that lost a norm

	ctx := context.Background()
	pub, _ := checkpoint.Open(ctx, filepath.Join(dir, "published"), checkpoint.Options{})
	defer pub.Close()
	exp, _ := checkpoint.Open(ctx, filepath.Join(dir, "exported"), checkpoint.Options{})
	defer exp.Close()
	d, _ := verify.Diff(ctx, pub, exp, verify.DiffOptions{})
	fingerprint := d.Fingerprint(verify.ValuePolicy{}, []string{"ckptcheck example"})

	var parts []verify.MergeInput
	for i := range 3 {
		p := verify.Partition{Index: i, Count: 3}
		values, _ := d.CompareValues(ctx, verify.ValueOptions{Partition: p})
		var js bytes.Buffer // each run writes its report, on its own machine
		verify.NewValuesReport(verify.ValuesReportInput{FailOn: verify.Error, Comparison: d, Values: values, Partition: p, Fingerprint: fingerprint}).WriteJSON(&js)
		r, _ := verify.ReadReport(&js)
		fmt.Printf("part %s: %d tensors, %d findings\n", p, len(r.Values.Tensors), len(r.Findings))
		parts = append(parts, verify.MergeInput{Name: fmt.Sprintf("part-%d.json", i), Report: r})
	}
	merged, err := verify.Merge(parts, verify.Error)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(merged.OK, merged.Values.Compared, "compared,", merged.Values.Equal, "equal,", merged.Summary.Error, "error")
	// Output:
	// part 0/3: 9 tensors, 47 findings
	// part 1/3: 10 tensors, 0 findings
	// part 2/3: 26 tensors, 0 findings
	// false 45 compared, 45 equal, 1 error
}
