package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func TestDCPCommands(t *testing.T) {
	const dir = "../../testdata/dcp/"
	if code, out, stderr := ckptcheck(t, "validate", dir+"good"); code != 0 || !strings.Contains(out, "2 tensors") {
		t.Errorf("validate good: exit %d\n%s%s", code, out, stderr)
	}
	for step, code := range map[string]string{"gap": "dcp_chunk_gap", "overlap": "dcp_chunk_overlap"} {
		if exit, out, stderr := ckptcheck(t, "validate", dir+step); exit != 1 || !strings.Contains(out, code) || !strings.Contains(out, "model.w") {
			t.Errorf("validate %s: exit %d\n%s%s", step, exit, out, stderr)
		}
	}
	code, out, stderr := ckptcheck(t, "inspect", dir+"good")
	if code != 0 || !strings.Contains(out, "model.w") || strings.Contains(out, "exp_avg") || !strings.Contains(out, "dcp.optimizer = 1 entry") {
		t.Errorf("inspect good: exit %d\n%s%s", code, out, stderr)
	}
}

// dcpExport writes the good step's model tensors as safetensors:
// model.w = arange(24) as F32 [4, 6], model.b = arange(6) as BF16; off
// changes model.b's last value.
func dcpExport(t *testing.T, off bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := safetensors.NewWriter(f)
	var wb, bb []byte
	for i := range 24 {
		wb = binary.LittleEndian.AppendUint32(wb, math.Float32bits(float32(i)))
	}
	for i := range 6 {
		v := float32(i)
		if off && i == 5 {
			v = 7
		}
		bb = binary.LittleEndian.AppendUint16(bb, uint16(math.Float32bits(v)>>16))
	}
	if err := w.Add("model.w", safetensors.F32, []uint64{4, 6}, wb); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("model.b", safetensors.BF16, []uint64{6}, bb); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDCPDiff(t *testing.T) {
	step := "../../testdata/dcp/good"
	code, out, stderr := ckptcheck(t, "diff", "--values", dcpExport(t, false), step)
	if code != 0 || strings.Contains(out, "dcp_chunked") || !strings.Contains(out, "2 compared") || strings.Contains(out, "exp_avg") {
		t.Errorf("diff: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := ckptcheck(t, "diff", "--values", dcpExport(t, true), step); code != 1 || !strings.Contains(out, "model.b") {
		t.Errorf("diff with model.b changed: exit %d\n%s%s", code, out, stderr)
	}
}

// TestDCPTransformDiff: a tensor whose items record a transform is
// compared by name, shape and dtype (dcp_chunked names why), the others
// by value.
func TestDCPTransformDiff(t *testing.T) {
	code, out, stderr := ckptcheck(t, "diff", "--values", dcpExport(t, false), "../../testdata/dcp/transform")
	if code != 0 || !strings.Contains(out, "dcp_chunked") || !strings.Contains(out, "stored with a transform") || !strings.Contains(out, "1 compared") {
		t.Errorf("diff: exit %d\n%s%s", code, out, stderr)
	}
}
