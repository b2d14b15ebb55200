package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/verify"
)

// An export that is weights only, checked as the final gate before upload.
func ExampleCompareFiles() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir)
	os.Remove(filepath.Join(dir, "exported", "config.json"))

	ctx := context.Background()
	pub, _ := checkpoint.Open(ctx, filepath.Join(dir, "published"), checkpoint.Options{})
	defer pub.Close()
	exp, _ := checkpoint.Open(ctx, filepath.Join(dir, "exported"), checkpoint.Options{})
	defer exp.Close()
	for _, required := range []bool{false, true} {
		findings, _ := verify.CompareFiles(ctx, pub, exp, verify.FileOptions{RequireFiles: required})
		for _, f := range findings {
			fmt.Println(f.Severity, f.Code, filepath.Base(f.File))
		}
	}
	// Output:
	// info weights_only_export exported
	// error missing_file config.json
}

// A baseline accepts findings a team has decided to live with; they are
// reported as suppressed and do not fail the run.
func ExampleBaseline() {
	r := verify.NewReport("diff", verify.Error, nil, []verify.Finding{
		{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "model.layers.2.self_attn.k_norm.weight"},
	})
	accept, _ := verify.NewAccepted(verify.CodeMissingKey, "*.k_norm.weight", "", "", "dropped on purpose")
	b := &verify.Baseline{Source: ".ckptcheck.yaml", Accepted: []*verify.Accepted{accept}}
	b.Apply(r)
	fmt.Println(r.OK, r.Summary.Error, r.Summary.Suppressed, r.Suppressed[0].Reason)
	// Output: true 0 1 dropped on purpose
}
