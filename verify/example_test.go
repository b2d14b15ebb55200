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

func ExampleDiff() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir) // a published checkpoint and an F32 export that lost a norm

	ctx := context.Background()
	pub, _ := checkpoint.Open(ctx, filepath.Join(dir, "published"), checkpoint.Options{})
	defer pub.Close()
	exp, _ := checkpoint.Open(ctx, filepath.Join(dir, "exported"), checkpoint.Options{})
	defer exp.Close()

	d, _ := verify.Diff(ctx, pub, exp, verify.DiffOptions{})
	values, _ := d.CompareValues(ctx, verify.ValueOptions{})
	report := verify.NewReport("diff", verify.Error, nil, append(d.Findings, values.Findings...))
	fmt.Println(report.OK, report.Summary.Error, report.Summary.Warning)
	fmt.Println(values.Compared, "compared,", values.Equal, "equal")
	for _, f := range report.Findings {
		if f.Severity == verify.Error {
			fmt.Println(f)
		}
	}
	// Output:
	// false 1 45
	// 45 compared, 45 equal
	// error missing_key model.layers.2.self_attn.k_norm.weight: in published, missing from exported
}

func ExampleValidate() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteExample(dir)
	shard := filepath.Join(dir, "published", "model-00002-of-00003.safetensors")
	st, _ := os.Stat(shard)
	os.Truncate(shard, st.Size()-3) // a download cut short

	c, _ := checkpoint.Open(context.Background(), filepath.Join(dir, "published"), checkpoint.Options{})
	defer c.Close()
	fs, _ := verify.Validate(context.Background(), c)
	for _, f := range fs {
		fmt.Println(f.Code, filepath.Base(f.File))
	}
	// Output: metadata_incomplete_buffer model-00002-of-00003.safetensors
}
