package crosscheck

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	nlp "github.com/nlpodyssey/safetensors"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// realData is the shared folder's third-party files, read in place.
var realData = filepath.Join("..", "..", "..", "shared", "realdata")

// realFiles lists the .safetensors files under realData, none when it is
// absent (CI has it).
func realFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(realData, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".safetensors" {
			files = append(files, p)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err != nil {
		t.Logf("real third-party files not found at %s (present in CI): %v", realData, err)
	}
	return files
}

// TestAgainstNlpodyssey compares ckptcheck's reader with an independent Go
// port of the reference on every valid file within its dtypes: the real
// files, and files from ckptcheck's writer.
func TestAgainstNlpodyssey(t *testing.T) {
	type input struct {
		name string
		data []byte
	}
	var inputs []input
	for _, p := range realFiles(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{p, b})
	}
	var buf bytes.Buffer
	w := safetensors.NewWriter(&buf)
	w.SetMetadata(map[string]string{"format": "pt"})
	for _, add := range []error{
		w.Add("model.embed_tokens.weight", safetensors.BF16, []uint64{8, 4}, make([]byte, 64)),
		w.Add("scalar", safetensors.I64, []uint64{}, make([]byte, 8)),
		w.Add("empty", safetensors.F16, []uint64{0, 3}, nil),
		w.Add("flags", safetensors.BOOL, []uint64{3}, []byte{1, 0, 1}),
		w.Close(),
	} {
		if add != nil {
			t.Fatal(add)
		}
	}
	inputs = append(inputs, input{"written", buf.Bytes()})

	compared := 0
	for _, in := range inputs {
		ours, err := safetensors.NewFile(bytes.NewReader(in.data), int64(len(in.data)))
		if err != nil {
			t.Errorf("%s: %v", in.name, err)
			continue
		}
		if slices.ContainsFunc(ours.Tensors, func(ti *safetensors.Tensor) bool { _, ok := nlp.ParseDType(ti.DType.String()); return ok != nil }) {
			continue // a dtype the port lacks (F8 and newer)
		}
		theirs, err := nlp.Deserialize(in.data)
		if err != nil {
			t.Errorf("%s: nlpodyssey rejects a file we accept: %v", in.name, err)
			continue
		}
		compared++
		if theirs.Len() != len(ours.Tensors) {
			t.Errorf("%s: %d tensors vs %d", in.name, theirs.Len(), len(ours.Tensors))
		}
		for _, ti := range ours.Tensors {
			view, ok := theirs.Tensor(ti.Name)
			if !ok {
				t.Errorf("%s: %q missing in nlpodyssey", in.name, ti.Name)
				continue
			}
			start := int(ours.DataOffset()) + int(ti.DataOffsets[0])
			if view.DType().String() != ti.DType.String() || !slices.Equal(view.Shape(), ti.Shape) ||
				view.DataLen() != ti.Size() || (ti.Size() > 0 && &view.Data()[0] != &in.data[start]) {
				t.Errorf("%s: %q: nlpodyssey %v %v len %d, ours %v %v %v", in.name, ti.Name,
					view.DType(), view.Shape(), view.DataLen(), ti.DType, ti.Shape, ti.DataOffsets)
			}
		}
	}
	if compared == 0 {
		t.Fatal("compared no file")
	}
	t.Logf("compared %d files", compared)
}
