package report_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func exampleReport() *verify.Report {
	inputs := []verify.Input{{Side: verify.Published, Path: "published"}, {Side: verify.Exported, Path: "exported"}}
	return verify.NewReport("diff", verify.Error, inputs, []verify.Finding{
		{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "model.layers.2.self_attn.k_norm.weight", Message: "in published, missing from exported"},
		{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Key: "model.norm.weight", Message: "published BF16, exported F32"},
	})
}

// GitHub Actions annotations; the text report follows in a log group
// between stop-commands lines.
func ExampleGitHub() {
	var b strings.Builder
	report.GitHub(&b, exampleReport(), report.Options{CommandsToken: "f00d"})
	head, _, _ := strings.Cut(b.String(), "::group::")
	fmt.Print(head)
	// Output:
	// ckptcheck diff: FAIL: 1 error, 1 warning
	// ::error title=ckptcheck missing_key::model.layers.2.self_attn.k_norm.weight: in published, missing from exported
	// ::warning title=ckptcheck dtype_mismatch::model.norm.weight: published BF16, exported F32
}

func ExampleJUnit() {
	opt := report.Options{Clock: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }, Hostname: "ci"}
	var b strings.Builder
	report.JUnit(&b, exampleReport(), opt)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "<testsuite name=\"ckptcheck.diff.keys\"") || strings.Contains(line, "<failure") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// <testsuite name="ckptcheck.diff.keys" package="ckptcheck.diff" id="3" timestamp="2026-01-02T03:04:05" hostname="ci" tests="2" failures="1" errors="0" skipped="0" time="0">
	// <failure message="in published, missing from exported" type="missing_key">error missing_key: model.layers.2.self_attn.k_norm.weight: in published, missing from exported
}

func ExampleWrite() {
	report.Write(os.Stdout, "markdown", exampleReport(), report.Options{})
	// Output:
	// ### ❌ ckptcheck diff: FAIL: 1 error, 1 warning
	//
	// | input | path | files | tensors | adapter |
	// |---|---|---:|---:|---|
	// | published | `published` | 0 | 0 |  |
	// | exported | `exported` | 0 | 0 |  |
	//
	// | severity | code | findings |
	// |---|---|---:|
	// | error | `missing_key` | 1 |
	// | warning | `dtype_mismatch` | 1 |
	//
	// #### Findings
	//
	// **error** `missing_key` (1)
	//
	// - `model.layers.2.self_attn.k_norm.weight: in published, missing from exported`
	//
	// **warning** `dtype_mismatch` (1)
	//
	// - `model.norm.weight: published BF16, exported F32`
	//
	// <details><summary>All 2 findings</summary>
	//
	// - error `missing_key` `model.layers.2.self_attn.k_norm.weight: in published, missing from exported`
	// - warning `dtype_mismatch` `model.norm.weight: published BF16, exported F32`
	//
	// </details>
}

func ExampleFamilyOf() {
	for _, c := range []verify.Code{verify.CodeInvalidOffset, verify.CodeIndexMissingShard, verify.CodeMissingKey, verify.CodeReinitialized} {
		fmt.Println(c, report.FamilyOf(c))
	}
	// Output:
	// invalid_offset format
	// index_missing_shard index
	// missing_key keys
	// reinitialized values
}
