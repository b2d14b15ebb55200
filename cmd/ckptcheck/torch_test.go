package main

import (
	"archive/zip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// torchExport writes tied.bin's tensors (from expected.json) as a
// safetensors file; flip changes one byte of lm_head.weight.
func torchExport(t *testing.T, flip bool) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/torchsave/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]map[string]struct {
		DType string   `json:"dtype"`
		Shape []uint64 `json:"shape"`
		Hex   string   `json:"hex"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := safetensors.NewWriter(f)
	for _, name := range []string{"embed.weight", "lm_head.weight", "row2"} {
		e := exp["tied.bin"][name]
		data, _ := hex.DecodeString(e.Hex)
		if flip && name == "lm_head.weight" {
			data[0] ^= 1
		}
		d, _ := safetensors.ParseDType(e.DType)
		if err := w.Add(name, d, e.Shape, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTorchCommands(t *testing.T) {
	bin := "../../testdata/torchsave/tied.bin"
	if code, out, stderr := ckptcheck(t, "inspect", bin); code != 0 || !strings.Contains(out, "lm_head.weight") {
		t.Errorf("inspect: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := ckptcheck(t, "diff", "--values", bin, torchExport(t, false)); code != 0 {
		t.Errorf("diff --values of the same values: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := ckptcheck(t, "diff", "--values", bin, torchExport(t, true)); code != 1 || !strings.Contains(out, "value_mismatch") {
		t.Errorf("diff --values of a changed value: exit %d\n%s", code, out)
	}
	hostile := filepath.Join(t.TempDir(), "pytorch_model.bin")
	f, err := os.Create(hostile)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	w.Write([]byte("\x80\x02cposix\nsystem\nq\x00X\x0b\x00\x00\x00touch /tmp/q\x85R."))
	zw.Close()
	f.Close()
	for _, cmd := range []string{"validate", "inspect"} {
		code, out, stderr := ckptcheck(t, cmd, hostile)
		if code != 1 || !strings.Contains(out+stderr, "unsafe_pickle") || !strings.Contains(out+stderr, "posix.system") {
			t.Errorf("%s of a hostile pickle: exit %d, want 1 naming unsafe_pickle and posix.system\n%s%s", cmd, code, out, stderr)
		}
	}
}

// TestTorchPartitionMerge: diff --values of a .bin against its
// safetensors export, one value changed, run as partitions and merged, is
// the single run's report.
func TestTorchPartitionMerge(t *testing.T) {
	clearPartitionEnv(t)
	bin := "../../testdata/torchsave/tied.bin"
	exp := torchExport(t, true)
	files := partitionReports(t, t.TempDir(), 2, bin, exp)
	_, single, _ := ckptcheck(t, "diff", "--values", "--format", "json", bin, exp)
	code, merged, stderr := ckptcheck(t, "merge", "--format", "json", files[1], files[0])
	if code != 1 || !strings.Contains(merged, "value_mismatch") {
		t.Fatalf("merge: exit %d, want 1 with the value_mismatch\n%s%s", code, merged, stderr)
	}
	if a, b := withoutMergeFields(t, merged), withoutMergeFields(t, single); a != b {
		t.Errorf("merged JSON differs from the single run's:\n%s\nwant\n%s", a, b)
	}
}
