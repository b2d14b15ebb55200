package verify

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestReportRoundTrip: a report written by WriteJSON reads back equal,
// whatever it holds (findings of every kind, value statistics with
// undefined ones, an inspection, an explanation), so that partition
// reports can be merged from their JSON. Value findings are not written
// twice: they are among the report's findings.
func TestReportRoundTrip(t *testing.T) {
	pub := published(t)
	zeroed := fixture.Tiny.Tensors(safetensors.BF16)
	for i, x := range zeroed {
		if x.Name == "model.norm.weight" {
			zeroed[i] = fixture.Map(x, safetensors.BF16, func(int, float32) float32 { return 0 })
		}
		if x.Name == "model.layers.1.mlp.up_proj.weight" {
			zeroed[i] = fixture.Map(x, safetensors.F32, func(i int, v float32) float32 {
				if i == 3 {
					return float32(math.Inf(1))
				}
				return v
			})
		}
	}
	exp := export(t, zeroed, nil)
	d := diffPaths(t, pub, exp, DiffOptions{})
	values, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inputs := []Input{DescribeInput(d.Published.Checkpoint, Published), DescribeInput(d.Exported.Checkpoint, Exported)}
	diff := NewReport("diff", Warning, inputs, append(d.Findings, values.Findings...))
	diff.Values = values
	diff.Explanation = d.Explain("model.layers.1.mlp.up_proj.weight")
	inspect := NewReport("inspect", Error, inputs[:1], nil)
	inspect.Inspection = Inspect(openCheckpoint(t, pub), nil, true)

	// A detail beyond float64's integers (a hostile config's layer count).
	huge := NewReport("validate", Never, nil, []Finding{{Code: CodeConfigMismatch, Severity: Warning, Message: "m",
		Expected: uint64(math.MaxUint64), Got: 1, Published: safetensors.BF16, Keys: []string{"a", "b"}}})
	for _, r := range []*Report{diff, inspect, huge, NewReport("validate", Error, nil, nil)} {
		t.Run(r.Command+"/"+r.FailOn.String(), func(t *testing.T) {
			var first, second bytes.Buffer
			if err := r.WriteJSON(&first); err != nil {
				t.Fatal(err)
			}
			got, err := ReadReport(bytes.NewReader(first.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			// Details (published, expected...) are any: they read back as
			// JSON values, so the JSON is what must stay the same.
			if err := got.WriteJSON(&second); err != nil {
				t.Fatal(err)
			}
			if first.String() != second.String() {
				t.Errorf("read back and written again:\n%s\nwant:\n%s", second.String(), first.String())
			}
			if got.Command != r.Command || got.OK != r.OK || got.FailOn != r.FailOn || got.Summary != r.Summary ||
				!reflect.DeepEqual(got.Inputs, r.Inputs) || len(got.Findings) != len(r.Findings) {
				t.Errorf("read back %+v, want %+v", got, r)
			}
			// Undefined statistics are NaN, which DeepEqual never finds
			// equal: the JSON above compares them; here, that they are there.
			if r.Values != nil && (got.Values == nil || len(got.Values.Tensors) != len(r.Values.Tensors) || got.Values.Compared != r.Values.Compared) {
				t.Errorf("value statistics differ after the round trip")
			}
			if r.Inspection != nil && (got.Inspection == nil || !reflect.DeepEqual(got.Inspection.Tensors, r.Inspection.Tensors)) {
				t.Errorf("inspection differs after the round trip")
			}
		})
	}
	if diff.Summary.Error == 0 || diff.Summary.Warning == 0 || diff.Values == nil || len(diff.Values.Tensors) == 0 || diff.Explanation == nil {
		t.Errorf("the diff report lacks what it should exercise: %+v", diff.Summary)
	}
	for _, bad := range []string{`{"schema":"ckptcheck.report/v2"}`, `[]`, `{`} {
		if _, err := ReadReport(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}
