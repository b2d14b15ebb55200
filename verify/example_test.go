package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func ExampleDiff() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir) // a published checkpoint and an F32 export that lost a norm

	pub, _ := safetensors.OpenCheckpoint(filepath.Join(dir, "published"))
	defer pub.Close()
	exp, _ := safetensors.OpenCheckpoint(filepath.Join(dir, "exported"))
	defer exp.Close()

	d := verify.Diff(pub, exp, verify.DiffOptions{})
	values, more, _ := d.CompareValues(context.Background(), verify.ValueOptions{})
	report := verify.NewReport("diff", verify.Error, nil, append(d.Findings, more...))
	fmt.Println(report.Verdict())
	fmt.Println(values.Summary())
	for _, f := range report.Findings {
		if f.Severity == verify.Error {
			fmt.Println(f)
		}
	}
	// Output:
	// FAIL: 1 error, 45 warnings
	// 45 compared: 45 equal values
	// error missing_key model.layers.2.self_attn.k_norm.weight: in published, missing from exported
}

func ExampleValidate() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir)
	shard := filepath.Join(dir, "published", "model-00002-of-00003.safetensors")
	st, _ := os.Stat(shard)
	os.Truncate(shard, st.Size()-3) // a download cut short

	c, _ := safetensors.OpenCheckpoint(filepath.Join(dir, "published"))
	defer c.Close()
	for _, f := range verify.Validate(c) {
		fmt.Println(f.Code, filepath.Base(f.File))
	}
	// Output: metadata_incomplete_buffer model-00002-of-00003.safetensors
}
