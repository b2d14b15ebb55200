package torchsave

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// directFile is a remote file's stand-in: it counts what is read through
// ReadAt (which a remote file reads ahead) and through ReadAtDirect.
type directFile struct {
	*bytes.Reader
	ahead, direct atomic.Int64
}

func (d *directFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := d.Reader.ReadAt(p, off)
	d.ahead.Add(int64(n))
	return n, err
}

func (d *directFile) ReadAtDirect(p []byte, off int64) (int, error) {
	n, err := d.Reader.ReadAt(p, off)
	d.direct.Add(int64(n))
	return n, err
}

// TestOpenReadsDirect: an archive over a file that offers direct reads is
// opened through them alone, reading its pickle, directory and local
// headers (a small part of the file), and describes the same tensors as
// over a plain reader.
func TestOpenReadsDirect(t *testing.T) {
	q := fixture.Qwen3{Vocab: 1024, Hidden: 256, Layers: 2, Intermediate: 512, Heads: 4, KVHeads: 2, HeadDim: 64, Tied: true, Seed: 1}
	path := filepath.Join(t.TempDir(), "pytorch_model.bin")
	if err := fixture.WriteTorchBin(path, q); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewFile(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	d := &directFile{Reader: bytes.NewReader(raw)}
	got, err := NewFile(d, int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tensors) != len(want.Tensors) || len(got.Tensors) == 0 {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		g, w := got.Tensors[i], want.Tensors[i]
		if g.Name != w.Name || g.Offset != w.Offset || g.Size != w.Size || !slices.Equal(g.Shape, w.Shape) || g.Err != nil {
			t.Errorf("%s: %+v, want %+v", w.Name, g.TensorInfo, w.TensorInfo)
		}
	}
	// Only the magic number is read through ReadAt: the first bytes,
	// which a remote file keeps from its open.
	if n := d.ahead.Load(); n > int64(len(legacyMagic)) {
		t.Errorf("%d bytes read through ReadAt, which a remote file reads ahead; want only the magic number's", n)
	}
	if n := d.direct.Load(); n == 0 || n > zipTail+int64(len(raw))/100 {
		t.Errorf("%d of the file's %d bytes read directly; want only its tail (the directory), pickle and headers", n, len(raw))
	}
}

// TestReadEntryChecks: a stored pickle read in one piece is still checked
// against its CRC and its size.
func TestReadEntryChecks(t *testing.T) {
	good := archive(t, entry{"a/data.pkl", tensorPickle, zip.Store}, entry{"a/data/0", string(make([]byte, 16)), zip.Store})
	flipped := bytes.Clone(good)
	i := bytes.Index(flipped, []byte("_rebuild_tensor_v2"))
	flipped[i] ^= 0x20
	for name, b := range map[string][]byte{"good": good, "a byte of data.pkl changed": flipped} {
		for _, r := range []interface {
			ReadAt([]byte, int64) (int, error)
		}{bytes.NewReader(b), &directFile{Reader: bytes.NewReader(b)}} {
			_, err := NewFile(r, int64(len(b)))
			var fe *FormatError
			switch {
			case name == "good" && err != nil:
				t.Errorf("%s (%T): %v", name, r, err)
			case name != "good" && (!errors.As(err, &fe) || fe.Kind != BadArchive || !errors.Is(err, zip.ErrChecksum)):
				t.Errorf("%s (%T): %v, want a BadArchive checksum error", name, r, err)
			}
		}
	}
}
