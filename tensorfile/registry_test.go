package tensorfile

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// fake is a format recognised by a magic string.
type fake struct {
	name, magic string
	exts        []string
}

func (f fake) Name() string         { return f.name }
func (f fake) Extensions() []string { return f.exts }
func (f fake) Sniff(prefix []byte, size int64) bool {
	return bytes.HasPrefix(prefix, []byte(f.magic))
}
func (f fake) Open(r io.ReaderAt, size int64) (File, error) {
	buf := make([]byte, len(f.magic))
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != f.magic {
		return nil, errors.New(f.name + ": bad magic")
	}
	return fakeFile{}, nil
}

type fakeFile struct{}

func (fakeFile) NumTensors() int { return 1 }
func (fakeFile) TensorInfo(int) TensorInfo {
	return TensorInfo{Name: "w", DType: F32, Shape: []uint64{2}, Offset: 4, Size: 8}
}
func (fakeFile) Meta() map[string]string { return nil }
func (fakeFile) Close() error            { return nil }

func init() {
	Register(fake{"fake-a", "AAAA", []string{".fa"}})
	Register(fake{"fake-b", "BBBB", []string{".fb", ".fb.bin"}})
}

func TestIdentify(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		prefix string
		want   string // format name, or "" for ErrUnknownFormat
	}{
		{"name decides", "x/model.fa", "AAAA", "fake-a"},
		{"name decides over disagreeing bytes", "model.fa", "BBBB", "fake-a"},
		{"name decides over no bytes", "model.fa", "", "fake-a"},
		{"two-dot extension", "model.fb.bin", "", "fake-b"},
		{"unnamed: bytes decide", "model.bin", "BBBB...", "fake-b"},
		{"no extension: bytes decide", "blob", "AAAA", "fake-a"},
		{"dot in a directory is not an extension", "dir.fa/blob", "BBBB", "fake-b"},
		{"suffix matched exactly", "model.FA", "", ""},
		{"nothing says", "model.bin", "CCCC", ""},
		{"nothing at all", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Identify(tt.file, []byte(tt.prefix), int64(len(tt.prefix)))
			if tt.want == "" {
				if !errors.Is(err, ErrUnknownFormat) || f != nil {
					t.Fatalf("Identify = %v, %v; want ErrUnknownFormat", f, err)
				}
				if !strings.Contains(err.Error(), tt.file) {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil || f.Name() != tt.want {
				t.Fatalf("Identify = %v, %v; want %s", f, err, tt.want)
			}
		})
	}
}

func TestLookupAndFormats(t *testing.T) {
	for _, name := range []string{"fake-a", "fake-b"} {
		if f, ok := Lookup(name); !ok || f.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, f, ok)
		}
	}
	if f, ok := Lookup("nope"); ok || f != nil {
		t.Errorf("Lookup(nope) = %v, %v", f, ok)
	}
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name())
	}
	// The examples link safetensors, which registers itself too.
	if got := strings.Join(names, ","); !strings.Contains(got, "fake-a,fake-b") {
		t.Errorf("Formats() = %s", got)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	tests := []struct {
		name string
		f    Format
	}{
		{"same name", fake{"fake-a", "ZZZZ", nil}},
		{"same extension", fake{"fake-c", "ZZZZ", []string{".fb"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			Register(tt.f)
		})
	}
	if _, ok := Lookup("fake-c"); ok {
		t.Error("a refused registration was kept")
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             string // format, or an error substring
		wantErr          bool
	}{
		{"by name", "m.fa", "AAAA-data", "fake-a", false},
		{"by bytes", "m", "BBBB-data", "fake-b", false},
		{"named, bytes disagree: the named format's error", "m.fa", "BBBB-data", "fake-a: bad magic", true},
		{"unknown", "m", "CCCC", "unknown format", true},
		{"short file", "m", "AA", "unknown format", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, f, err := Open(tt.file, strings.NewReader(tt.data), int64(len(tt.data)))
			if tt.wantErr {
				if err == nil || file != nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), tt.file+": ") {
					t.Fatalf("Open = %v, %v; want error %q with the file name", file, err, tt.want)
				}
				return
			}
			if err != nil || f.Name() != tt.want || file.NumTensors() != 1 {
				t.Fatalf("Open = %v, %v, %v", file, f, err)
			}
			for i, ti := range Tensors(file) {
				if i != 0 || ti.Name != "w" {
					t.Errorf("Tensors: %d %v", i, ti)
				}
			}
		})
	}
}

// readerAt fails like a truncated remote file.
type failing struct{}

func (failing) ReadAt([]byte, int64) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestOpenReadError(t *testing.T) {
	_, _, err := Open("m", failing{}, 100)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Open = %v, want the read error", err)
	}
}
