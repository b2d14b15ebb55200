package verify

import (
	"archive/zip"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

const torchFixtures = "../testdata/torchsave"

// torchExpected is testdata/torchsave/expected.json: each fixture's tensors
// as torch read them back, with their contiguous bytes.
type torchExpected map[string]map[string]struct {
	DType      string   `json:"dtype"`
	Shape      []uint64 `json:"shape"`
	Hex        string   `json:"hex"`
	Contiguous bool     `json:"contiguous"`
}

func readTorchExpected(t *testing.T) torchExpected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(torchFixtures, "expected.json"))
	must(t, err)
	var e torchExpected
	must(t, json.Unmarshal(b, &e))
	return e
}

// exportTorch writes the tensors of the given fixtures, from expected.json,
// as one safetensors file with safetensors.Writer; change, when set, alters
// a tensor's bytes first.
func exportTorch(t *testing.T, fixtures []string, change func(name string, b []byte)) string {
	t.Helper()
	exp := readTorchExpected(t)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	must(t, err)
	defer f.Close()
	w := safetensors.NewWriter(f)
	for _, fx := range fixtures {
		names := make([]string, 0, len(exp[fx]))
		for n := range exp[fx] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			e := exp[fx][n]
			b, err := hex.DecodeString(e.Hex)
			must(t, err)
			if change != nil {
				change(n, b)
			}
			d, ok := safetensors.ParseDType(e.DType)
			if !ok {
				t.Fatalf("%s: dtype %s", n, e.DType)
			}
			must(t, w.Add(n, d, e.Shape, b))
		}
	}
	must(t, w.Close())
	return dir
}

func TestInspectTorch(t *testing.T) {
	exp := readTorchExpected(t)
	for _, fx := range []string{"dtypes.bin", "tied.bin", "legacy.bin", "views.pt"} {
		ins := Inspect(openCheckpoint(t, filepath.Join(torchFixtures, fx)), nil, false)
		if ins.Totals.Tensors != len(exp[fx]) || ins.Totals.Files != 1 {
			t.Errorf("%s: %d tensors in %d files, want %d in 1", fx, ins.Totals.Tensors, ins.Totals.Files, len(exp[fx]))
		}
		for _, r := range ins.Tensors {
			e := exp[fx][r.Name]
			if r.DType.String() != e.DType || !slices.Equal(r.Shape, e.Shape) || r.Bytes != uint64(len(e.Hex)/2) {
				t.Errorf("%s %s: %s %v %d bytes, want %s %v %d", fx, r.Name, r.DType, r.Shape, r.Bytes, e.DType, e.Shape, len(e.Hex)/2)
			}
		}
	}
	ins := Inspect(openCheckpoint(t, filepath.Join(torchFixtures, "sharded")), nil, false)
	if ins.Totals.Tensors != 3 || ins.Totals.Files != 2 {
		t.Errorf("sharded: %d tensors in %d files, want 3 in 2", ins.Totals.Tensors, ins.Totals.Files)
	}
}

func TestValidateTorch(t *testing.T) {
	tests := []struct {
		path string
		want []string // severity code key
	}{
		{"dtypes.bin", nil},
		{"tied.bin", nil},
		{"legacy.bin", nil},
		{"sharded", nil},
		{"sharded/pytorch_model.bin.index.json", nil},
		{"views.pt", nil},
		{"strided.pt", nil},
	}
	for _, tt := range tests {
		fs, err := Validate(context.Background(), openCheckpoint(t, filepath.Join(torchFixtures, tt.path)))
		must(t, err)
		if got := notable(fs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.path, got, tt.want)
		}
	}
}

// hostileBin writes a torch.save archive whose data.pkl calls posix.system.
func hostileBin(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	must(t, err)
	_, err = w.Write([]byte("\x80\x02cposix\nsystem\nq\x00X\x0b\x00\x00\x00touch /tmp/q\x85R."))
	must(t, err)
	must(t, zw.Close())
}

func TestValidateHostileTorch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pytorch_model.bin")
	hostileBin(t, path)
	fs, err := Validate(context.Background(), openCheckpoint(t, dir))
	must(t, err)
	f := only(t, fs, CodeUnsafePickle)
	if f == nil || f.Severity != Error || !strings.Contains(f.Message, "posix.system") || !strings.Contains(f.Message, path) {
		t.Errorf("finding %+v; want an unsafe_pickle error naming posix.system and the file", f)
	}
}

func TestSupersededWeights(t *testing.T) {
	dir := exportTorch(t, []string{"tied.bin"}, nil)
	b, err := os.ReadFile(filepath.Join(torchFixtures, "tied.bin"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), b, 0o644))
	fs, err := Validate(context.Background(), openCheckpoint(t, dir))
	must(t, err)
	if f := only(t, fs, CodeSupersededWeights); f == nil || f.Severity != Info || !strings.Contains(f.Message, "pytorch_model.bin") {
		t.Errorf("finding %+v; want superseded_weights naming pytorch_model.bin", f)
	}
}

// TestDiffTorchAgainstSafetensors: a .bin and its safetensors export are the
// same model, names, shapes, dtypes and values; one changed value is a
// value_mismatch.
func TestDiffTorchAgainstSafetensors(t *testing.T) {
	tests := []struct {
		pub      string
		fixtures []string
	}{
		{"dtypes.bin", []string{"dtypes.bin"}},
		{"tied.bin", []string{"tied.bin"}},
		{"legacy.bin", []string{"legacy.bin"}},
		{"views.pt", []string{"views.pt"}},     // a transpose, an expand
		{"strided.pt", []string{"strided.pt"}}, // column slices, permutes, batched transposes
		{"sharded", []string{"sharded/pytorch_model-00001-of-00002.bin", "sharded/pytorch_model-00002-of-00002.bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.pub, func(t *testing.T) {
			pub := filepath.Join(torchFixtures, tt.pub)
			rep, fs := compareValues(t, pub, exportTorch(t, tt.fixtures, nil), DiffOptions{WeightsOnly: true}, ValueOptions{})
			if got := notable(fs); len(got) > 0 || rep.Mismatched != 0 || rep.Compared == 0 {
				t.Errorf("same values: %v, %d of %d mismatched", got, rep.Mismatched, rep.Compared)
			}
			d := diffPaths(t, pub, exportTorch(t, tt.fixtures, nil), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) > 0 {
				t.Errorf("structural diff: %v", got)
			}
			changed := ""
			_, fs = compareValues(t, pub, exportTorch(t, tt.fixtures, func(name string, b []byte) {
				if changed == "" && len(b) > 0 {
					changed = name
					b[len(b)-1] ^= 0x01
				}
			}), DiffOptions{WeightsOnly: true}, ValueOptions{})
			if f := only(t, fs, CodeValueMismatch); f == nil || f.Key != changed {
				t.Errorf("one value changed in %s: %v", changed, notable(fs))
			}
		})
	}
}

// TestDiffTorchViews: a view is read through its pieces or as a
// transpose, element by element as torch reads it: reading the stored
// range in order instead is caught.
func TestDiffTorchViews(t *testing.T) {
	pub := filepath.Join(torchFixtures, "strided.pt")
	rep, fs := compareValues(t, pub, exportTorch(t, []string{"strided.pt"}, nil), DiffOptions{WeightsOnly: true}, ValueOptions{})
	if rep.Compared != 6 || rep.Mismatched != 0 || len(notable(fs)) > 0 {
		t.Errorf("%d compared, %d mismatched, %v; want 6 compared and matching", rep.Compared, rep.Mismatched, notable(fs))
	}
	// The export holds each view's storage range as it lies in the file:
	// what a reader that ignored the strides would compare.
	f, err := torchsave.Open(pub)
	must(t, err)
	defer f.Close()
	raw, err := os.ReadFile(pub)
	must(t, err)
	stored := map[string][]byte{}
	for _, tt := range f.Tensors {
		off := tt.Offset
		if tt.Pieces != nil {
			off = int64(tt.Pieces[0].Offset)
		}
		stored[tt.Name] = raw[off : off+int64(tt.Size)]
	}
	_, fs = compareValues(t, pub, exportTorch(t, []string{"strided.pt"}, func(name string, b []byte) {
		if name != "expanded_rows" { // its first row is the storage
			copy(b, stored[name])
		}
	}), DiffOptions{WeightsOnly: true}, ValueOptions{})
	var got []string
	for _, f := range fs {
		if f.Code == CodeValueMismatch {
			got = append(got, f.Key)
		}
	}
	slices.Sort(got)
	if want := []string{"batch_transposed", "columns", "permuted", "transposed_row", "transposed_slice"}; !slices.Equal(got, want) {
		t.Errorf("mismatches %v, want %v", got, want)
	}
}

func TestTorchCodesDocumented(t *testing.T) {
	for _, k := range torchsave.ErrorKinds() {
		if _, ok := DocOf(TorchCode(k)); !ok {
			t.Errorf("torch error kind %s has no documented code", k)
		}
	}
}

// TestTorchIndexUnsafePaths: a pytorch_model.bin.index.json naming shards
// outside the folder (a backslash traversal, a drive letter, a UNC path)
// gets the safetensors index's index_unsafe_path on every OS, and nothing
// outside is opened.
func TestTorchIndexUnsafePaths(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(torchFixtures, "tied.bin"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "pytorch_model-00001-of-00001.bin"), b, 0o644))
	index := `{"weight_map": {"embed.weight": "pytorch_model-00001-of-00001.bin", "lm_head.weight": "pytorch_model-00001-of-00001.bin",
		"row2": "pytorch_model-00001-of-00001.bin", "a": "..\\..\\evil.bin", "b": "C:evil.bin", "c": "\\\\host\\share\\evil.bin"}}`
	must(t, os.WriteFile(filepath.Join(dir, "pytorch_model.bin.index.json"), []byte(index), 0o644))
	fs, err := Validate(context.Background(), openCheckpoint(t, dir))
	must(t, err)
	var got []string
	for _, f := range fs {
		if f.Code == CodeIndexUnsafePath {
			got = append(got, f.File)
		} else if f.Severity == Error {
			t.Errorf("%s %s %s", f.Code, f.Key, f.Message)
		}
	}
	slices.Sort(got)
	if want := []string{`..\..\evil.bin`, `C:evil.bin`, `\\host\share\evil.bin`}; !slices.Equal(got, want) {
		t.Errorf("index_unsafe_path on %q, want %q", got, want)
	}
}
