package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// torchModel is big enough (52 MB) that its storages span several of a
// remote file's read-ahead chunks.
var torchModel = fixture.Qwen3{Vocab: 8192, Hidden: 1024, Layers: 2, Intermediate: 2048, Heads: 8, KVHeads: 2, HeadDim: 128, Tied: true, Seed: 1}

// TestTorchRemote: a .bin over HTTP is read by ranges: validate, inspect
// and a structural diff read its pickle, directory and local headers, not
// its storages; diff --values reads them and matches.
func TestTorchRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 52 MB .bin")
	}
	root := t.TempDir()
	srv := filepath.Join(root, "srv")
	os.MkdirAll(srv, 0o755)
	bin := filepath.Join(srv, "pytorch_model.bin")
	if err := fixture.WriteTorchBin(bin, torchModel); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "model.safetensors")
	if err := fixture.WriteStream(local, torchModel, safetensors.BF16, nil); err != nil {
		t.Fatal(err)
	}
	s := serveDir(t, srv)
	url := s.URL + "/pytorch_model.bin"
	for _, args := range [][]string{{"validate", url}, {"inspect", url}, {"diff", url, local}} {
		s.Reset()
		code, out, stderr := ckptcheck(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
		var binBytes int64
		for _, r := range s.Log() {
			if strings.HasSuffix(r.Path, ".bin") && r.Range == "" {
				t.Errorf("%v: %s requested whole", args, r.Path)
			}
		}
		binBytes = s.Bytes()
		if binBytes > st.Size()/100 {
			t.Errorf("%v: %d of the .bin's %d bytes served; want only its pickle, directory and headers (under 1%%)", args, binBytes, st.Size())
		}
	}
	// The folder's URL finds pytorch_model.bin, as transformers would.
	for _, u := range []string{url, s.URL + "/"} {
		code, out, stderr := ckptcheck(t, "diff", "--values", u, local)
		if code != 0 || !strings.Contains(out, "bit-identical") || !strings.Contains(out, "(1 file, 24 tensors") {
			t.Errorf("diff --values %s: exit %d\n%s%s", u, code, out, stderr)
		}
	}
}
