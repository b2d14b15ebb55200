package torchsave

import (
	"archive/zip"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

const fixtures = "../testdata/torchsave"

// expected is what gen.py printed: torch's own reading of each fixture.
type expected map[string]map[string]struct {
	DType      string    `json:"dtype"`
	Shape      []uint64  `json:"shape"`
	Stride     []uint64  `json:"stride"`
	Offset     uint64    `json:"storage_offset"`
	Contiguous bool      `json:"contiguous"`
	Values     []float64 `json:"values"`
	Hex        string    `json:"hex"`
}

func loadExpected(t *testing.T) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFixtures reads every file torch 1.13 wrote and compares each tensor
// with what torch itself read back: dtype, shape, strides and bytes.
func TestFixtures(t *testing.T) {
	for file, tensors := range loadExpected(t) {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(fixtures, file)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Legacy != (file == "legacy.bin") {
				t.Errorf("Legacy = %v", f.Legacy)
			}
			if len(f.Tensors) != len(tensors) {
				t.Errorf("%d tensors, want %d", len(f.Tensors), len(tensors))
			}
			for i, got := range tensorfile.Tensors(f) {
				want, ok := tensors[got.Name]
				if !ok {
					t.Errorf("unexpected tensor %q", got.Name)
					continue
				}
				if got.DType.String() != want.DType || !slices.Equal(got.Shape, want.Shape) ||
					!slices.Equal(f.Tensors[i].Stride, want.Stride) || f.Tensors[i].StorageOffset != want.Offset {
					t.Errorf("%s: %v %v strides %v at %d; want %s %v %v at %d", got.Name, got.DType, got.Shape,
						f.Tensors[i].Stride, f.Tensors[i].StorageOffset, want.DType, want.Shape, want.Stride, want.Offset)
				}
				if err := f.TensorError(i); err != nil {
					t.Errorf("%s: %v", got.Name, err)
					continue
				}
				b, err := logicalBytes(raw, f.Tensors[i])
				if err != nil {
					t.Fatalf("%s: %v", got.Name, err)
				}
				if h := hex.EncodeToString(b); h != want.Hex {
					t.Errorf("%s: bytes %s, want %s (values %v)", got.Name, h, want.Hex, want.Values)
				}
				if (f.Tensors[i].Pieces != nil || f.Tensors[i].Transposed) == want.Contiguous {
					t.Errorf("%s: pieces %v, transposed %v; contiguous is %v", got.Name, f.Tensors[i].Pieces, f.Tensors[i].Transposed, want.Contiguous)
				}
			}
		})
	}
}

// logicalBytes reads a tensor's elements in row-major order from a file's
// bytes: its range, its pieces, or its range transposed back.
func logicalBytes(raw []byte, t Tensor) ([]byte, error) {
	within := func(off, n uint64) bool { return off <= uint64(len(raw)) && n <= uint64(len(raw))-off }
	if t.Pieces != nil {
		var out []byte
		for _, p := range t.Pieces {
			if p.File != "" || !within(p.Offset, p.Length) {
				return nil, fmt.Errorf("piece %+v outside the file's %d bytes", p, len(raw))
			}
			out = append(out, raw[p.Offset:p.Offset+p.Length]...)
		}
		return out, nil
	}
	if t.Offset < 0 || !within(uint64(t.Offset), uint64(t.Size)) {
		return nil, fmt.Errorf("range %d+%d outside the file's %d bytes", t.Offset, t.Size, len(raw))
	}
	b := raw[t.Offset : t.Offset+t.Size]
	if !t.Transposed {
		return b, nil
	}
	n := len(t.Shape)
	rows, cols, es := int(t.Shape[n-2]), int(t.Shape[n-1]), t.DType.Bits()/8
	out := make([]byte, len(b))
	for m := 0; m < len(b); m += rows * cols * es {
		for r := range rows {
			for c := range cols {
				copy(out[m+(r*cols+c)*es:][:es], b[m+(c*rows+r)*es:][:es])
			}
		}
	}
	return out, nil
}

func TestTiedWeightsShareStorage(t *testing.T) {
	f, err := Open(filepath.Join(fixtures, "tied.bin"))
	if err != nil {
		t.Fatal(err)
	}
	a, b, row := f.Tensors[0], f.Tensors[1], f.Tensors[2]
	if a.Storage != b.Storage || a.Offset != b.Offset || row.Storage != a.Storage || row.Offset != a.Offset+2*3*4 {
		t.Errorf("tied %v / %v / %v", a, b, row)
	}
}

func TestRegistry(t *testing.T) {
	for _, name := range []string{"pytorch_model.bin", "model.pt", "ckpt.pth", "pytorch_model-00001-of-00002.bin"} {
		if f, ok := tensorfile.ByFileName(name); !ok || f.Name() != Name {
			t.Errorf("ByFileName(%s) = %v, %v", name, f, ok)
		}
	}
	for _, file := range []string{"dtypes.bin", "legacy.bin", "sharded/pytorch_model-00001-of-00002.bin"} {
		b, err := os.ReadFile(filepath.Join(fixtures, file))
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := tensorfile.Detect(b[:tensorfile.SniffLen], int64(len(b))); !ok || f.Name() != Name {
			t.Errorf("Detect(%s) = %v, %v", file, f, ok)
		}
		file, _, err := tensorfile.Open("blob", bytes.NewReader(b), int64(len(b)))
		if err != nil || file.NumTensors() == 0 {
			t.Errorf("tensorfile.Open(%s) = %v, %v", file, file, err)
		}
	}
	if _, ok := tensorfile.Detect([]byte("PK\x03\x04 not a torch archive, really not one at all..."), 100); ok {
		t.Error("any zip sniffs as torch")
	}
}

// tensorPickle is the data.pkl of {"w": a float32 tensor of 4 elements}
// over storage key "0", as torch.save writes it (protocol 2).
const tensorPickle = "\x80\x02}X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89}tRs."

type entry struct {
	name, data string
	method     uint16
}

func archive(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestNewFileRefuses(t *testing.T) {
	data16 := string(make([]byte, 16))
	tests := []struct {
		name   string
		file   []byte
		kind   ErrorKind // of NewFile's error, or of the tensor's when tensor is set
		tensor bool
		global string
	}{
		{"a well-formed archive", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"a/data/0", data16, zip.Store}), 0, false, ""},
		{"posix.system through REDUCE", archive(t, entry{"a/data.pkl", "\x80\x02cposix\nsystem\nX\x02\x00\x00\x00id\x85R.", zip.Store}), UnsafePickle, false, "posix.system"},
		{"builtins.eval through STACK_GLOBAL", archive(t, entry{"a/data.pkl", "\x80\x04\x8c\x08builtins\x8c\x04eval\x93X\x01\x00\x00\x001\x85R.", zip.Store}), UnsafePickle, false, "builtins.eval"},
		{"subprocess.Popen through INST", archive(t, entry{"a/data.pkl", "(X\x02\x00\x00\x00idisubprocess\nPopen\n.", zip.Store}), UnsafePickle, false, "INST subprocess.Popen"},
		{"a huge string claim", archive(t, entry{"a/data.pkl", "\x80\x02X\xff\xff\xff\xff.", zip.Store}), BadPickle, false, ""},
		{"not a zip", []byte("hello, this is not a zip archive"), BadArchive, false, ""},
		{"no data.pkl", archive(t, entry{"a/version", "3\n", zip.Store}), BadArchive, false, ""},
		{"entry outside the folder", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"b/data/0", data16, zip.Store}), BadArchive, false, ""},
		{"big-endian", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"a/byteorder", "big", zip.Store}), BigEndian, false, ""},
		{"deflated storage", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"a/data/0", data16, zip.Deflate}), CompressedStorage, true, ""},
		{"short storage", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"a/data/0", data16[:12], zip.Store}), StorageOutOfRange, true, ""},
		{"missing storage", archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}), BadArchive, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFile(bytes.NewReader(tt.file), int64(len(tt.file)))
			if tt.kind == 0 || tt.tensor {
				if err != nil || len(f.Tensors) != 1 {
					t.Fatalf("NewFile = %v, %v", f, err)
				}
				err = f.TensorError(0)
				if tt.kind == 0 {
					if ti := f.TensorInfo(0); err != nil || ti.Size != 16 || ti.Name != "w" {
						t.Errorf("tensor %v, %v", ti, err)
					}
					return
				}
			} else if f != nil {
				t.Fatalf("NewFile = %v with error %v", f, err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Kind != tt.kind || fe.Global != tt.global {
				t.Errorf("error %v; want kind %v global %q", err, tt.kind, tt.global)
			}
		})
	}
}

func FuzzNewFile(f *testing.F) {
	for _, n := range []string{"dtypes.bin", "tied.bin", "views.pt", "legacy.bin"} {
		b, err := os.ReadFile(filepath.Join(fixtures, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if file != nil {
				t.Fatal("a file with an error")
			}
			return
		}
		for i, ti := range tensorfile.Tensors(file) {
			if file.TensorError(i) != nil {
				continue
			}
			if _, err := logicalBytes(b, file.Tensors[i]); err != nil {
				t.Fatalf("tensor %s: %v", ti.Name, err)
			}
		}
	})
}

// A pickle whose dict holds itself, and a dict referenced many times
// through the memo: walked once each, within the budget, without looping.
func TestSharedReferencesWalkedOnce(t *testing.T) {
	// d = {}; d["self"] = d; d["a".."h"] = e where e = {"w": tensor}
	p := "\x80\x02}q\x00X\x04\x00\x00\x00selfh\x00s"
	p += "X\x01\x00\x00\x00a}q\x01" + tensorPickle[3:len(tensorPickle)-1] + "s"
	for _, k := range "bcdefgh" {
		p += "X\x01\x00\x00\x00" + string(k) + "h\x01s"
	}
	p += "."
	b := archive(t, entry{"a/data.pkl", p, zip.Store}, entry{"a/data/0", string(make([]byte, 16)), zip.Store})
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 1 || f.Tensors[0].Name != "a.w" {
		t.Errorf("tensors %v", f.Tensors)
	}
}
