package values

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// failingAt fails every read that reaches byte limit, as a file that is
// cut short or a connection that breaks would, with its own message.
type failingAt struct {
	r     io.ReaderAt
	limit int64
}

var errBroken = errors.New("model.safetensors: reading at byte 1064: connection reset")

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		return 0, errBroken
	}
	return f.r.ReadAt(p, off)
}

// TestReadErrorsNameTheTensor: a read that fails while values are compared
// names the tensor and keeps the file's own error (its path and offset);
// a short read with no error says the offset it wanted.
func TestReadErrorsNameTheTensor(t *testing.T) {
	data := make([]byte, 512)
	op := func(off uint64) Operand {
		return Operand{DType: safetensors.F32, Shape: []uint64{4, 8}, Segments: []Segment{{Offset: off, Length: 128}}}
	}
	for _, tt := range []struct {
		name   string
		reader io.ReaderAt
		want   []string
		is     error
	}{
		{"the file's error", failingAt{bytes.NewReader(data), 200}, []string{`tensor "model.norm.weight"`, "model.safetensors: reading at byte 1064"}, errBroken},
		{"a short file", bytes.NewReader(data[:200]), []string{`tensor "model.norm.weight"`, "reading 128 bytes at data offset 128"}, io.ErrUnexpectedEOF},
	} {
		pair := &Pair{Name: "model.norm.weight", Published: op(0), Exported: op(128)}
		_, err := Run(context.Background(), []io.ReaderAt{tt.reader}, []*Pair{pair}, Options{Workers: 1})
		if err == nil || !errors.Is(err, tt.is) {
			t.Fatalf("%s: err = %v, want %v", tt.name, err, tt.is)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", tt.name, err, w)
			}
		}
	}
}
