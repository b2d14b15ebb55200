package checkpoint_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	_ "github.com/ckptcheck/ckptcheck/torchsave" // .bin, .pt and .pth
)

const torchFixtures = "../testdata/torchsave"

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copySharded copies the sharded .bin fixture (two shards and their index)
// into dir.
func copySharded(t *testing.T, dir string) {
	t.Helper()
	for _, n := range []string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json"} {
		copyFile(t, filepath.Join(torchFixtures, "sharded", n), filepath.Join(dir, n))
	}
}

func TestIsWeightFile(t *testing.T) {
	for name, want := range map[string]bool{
		"pytorch_model.bin":                 true,
		"pytorch_model-00001-of-00002.bin":  true,
		"pytorch_model.fp16.bin":            true,
		"diffusion_pytorch_model.bin":       true,
		"model.safetensors":                 true,
		"training_args.bin":                 false,
		"optimizer.bin":                     false,
		"optimizer.pt":                      false,
		"scheduler.pt":                      false,
		"rng_state.pth":                     false,
		"rng_state_3.pth":                   false,
		"pytorch_model.bin.index.json":      false,
		"README.md":                         false,
		"checkpoint/pytorch_model.bin.gz":   false,
		"subdir/training_args.bin":          false,
		"not_pytorch_model.bin":             false,
		"pytorch_model-00001-of-00002.bin~": false,
	} {
		if got := checkpoint.IsWeightFile(name); got != want {
			t.Errorf("IsWeightFile(%q) = %v, want %v", name, got, want)
		}
	}
	// Every torch file is a tensor file: one named as the path is read.
	if !checkpoint.IsTensorFile("training_args.bin") {
		t.Error("IsTensorFile(training_args.bin) = false")
	}
}

// TestTorchFolders: which files of a folder are read follows transformers.
func TestTorchFolders(t *testing.T) {
	trainer := []string{"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "optimizer.bin"}
	tests := []struct {
		name           string
		setup          func(t *testing.T, dir string)
		wantShards     []string
		wantIndex      string
		wantSuperseded []string
	}{
		{"sharded bin", func(t *testing.T, dir string) { copySharded(t, dir) },
			[]string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}, "pytorch_model.bin.index.json", nil},
		{"trainer pickles are no weights", func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(torchFixtures, "tied.bin"), filepath.Join(dir, "pytorch_model.bin"))
			for _, n := range trainer {
				os.WriteFile(filepath.Join(dir, n), []byte("not even a pickle"), 0o644)
			}
		}, []string{"pytorch_model.bin"}, "", nil},
		{"safetensors wins over a single bin", func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(torchFixtures, "tied.bin"), filepath.Join(dir, "pytorch_model.bin"))
			writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 2))
		}, []string{"model.safetensors"}, "", []string{"pytorch_model.bin"}},
		{"safetensors wins over a sharded bin", func(t *testing.T, dir string) {
			copySharded(t, dir)
			writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 2))
		}, []string{"model.safetensors"}, "", []string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			c := open(t, dir, checkpoint.Options{})
			if got := shardNames(c); !slices.Equal(got, tt.wantShards) {
				t.Errorf("shards %v, want %v", got, tt.wantShards)
			}
			for _, s := range c.Shards {
				if s.Status != checkpoint.ShardOK {
					t.Errorf("%s: %s %v", s.Name, s.Status, s.Err)
				}
			}
			gotIndex := ""
			if c.Index != nil {
				gotIndex = c.Index.Name
			}
			if gotIndex != tt.wantIndex || c.IndexErr != nil {
				t.Errorf("index %q (%v), want %q", gotIndex, c.IndexErr, tt.wantIndex)
			}
			if !slices.Equal(c.Superseded, tt.wantSuperseded) {
				t.Errorf("superseded %v, want %v", c.Superseded, tt.wantSuperseded)
			}
			if len(c.Unreferenced) > 0 {
				t.Errorf("unreferenced %v", c.Unreferenced)
			}
		})
	}
}

// TestTorchNamedExplicitly: a trainer's pickle, or the .bin index of a
// folder that also holds safetensors, is read when named as the path.
func TestTorchNamedExplicitly(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(torchFixtures, "tied.bin"), filepath.Join(dir, "training_args.bin"))
	copyFile(t, filepath.Join(torchFixtures, "views.pt"), filepath.Join(dir, "optimizer.pt"))
	for _, n := range []string{"training_args.bin", "optimizer.pt"} {
		c := open(t, filepath.Join(dir, n), checkpoint.Options{})
		if len(c.Shards) != 1 || c.Shards[0].Format == nil || c.Shards[0].Format.Name() != "torch" || c.NumTensors() != 3 {
			t.Errorf("%s: shards %v, %d tensors; want it read as torch", n, shardNames(c), c.NumTensors())
		}
	}
	dir = t.TempDir()
	copySharded(t, dir)
	writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 2))
	c := open(t, filepath.Join(dir, "pytorch_model.bin.index.json"), checkpoint.Options{})
	if len(c.Shards) != 2 || len(c.Unreferenced) != 0 {
		t.Errorf("shards %v, unreferenced %v; want the two .bin shards and none", shardNames(c), c.Unreferenced)
	}
}

// countingSource counts the bytes read from its files.
type countingSource struct {
	checkpoint.Dir
	read *atomic.Int64
}

type countingFile struct {
	checkpoint.File
	read *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

func (s countingSource) Open(ctx context.Context, name string) (checkpoint.File, error) {
	f, err := s.Dir.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingFile{f, s.read}, nil
}

// padStorages rewrites a torch.save archive with 1 MiB more in each storage
// entry, past the elements the pickle counts: a realistic storage size.
func padStorages(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, e := range zr.File {
		rc, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(filepath.Dir(e.Name)) == "data" {
			data = append(data, make([]byte, 1<<20)...)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.Name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestOpenTorchReadsNoStorages: opening a 16-shard .bin checkpoint reads
// its index, each archive's directory, pickle and storage headers, not its
// storages.
func TestOpenTorchReadsNoStorages(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(torchFixtures, "tied.bin"))
	if err != nil {
		t.Fatal(err)
	}
	padded := padStorages(t, src)
	var index bytes.Buffer
	index.WriteString(`{"weight_map": {`)
	const shards = 16
	for i := range shards {
		name := fmt.Sprintf("pytorch_model-%05d-of-%05d.bin", i+1, shards)
		if err := os.WriteFile(filepath.Join(dir, name), padded, 0o644); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			index.WriteString(",")
		}
		index.WriteString(fmt.Sprintf(`"t%d": %q`, i, name))
	}
	index.WriteString("}}")
	if err := os.WriteFile(filepath.Join(dir, "pytorch_model.bin.index.json"), index.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	c, err := checkpoint.OpenSource(context.Background(), countingSource{checkpoint.Dir(dir), &read}, "", checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Shards) != shards || c.NumTensors() != 3*shards {
		t.Fatalf("%d shards, %d tensors", len(c.Shards), c.NumTensors())
	}
	total := int64(shards * len(padded))
	if got := read.Load(); got > total/100 {
		t.Errorf("opening read %d of the shards' %d bytes; want only pickles and headers (under 1%%)", got, total)
	}
}

// TestShardOfEitherIndex: a single shard named as the path is found in its
// index when the folder holds the index of another format too.
func TestShardOfEitherIndex(t *testing.T) {
	dir := t.TempDir()
	copySharded(t, dir)
	writeFile(t, filepath.Join(dir, "model-00001-of-00001.safetensors"), vec("x", 2))
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map": {"x": "model-00001-of-00001.safetensors"}}`), 0o644)
	for shard, index := range map[string]string{
		"model-00001-of-00001.safetensors": "model.safetensors.index.json",
		"pytorch_model-00001-of-00002.bin": "pytorch_model.bin.index.json",
	} {
		c := open(t, filepath.Join(dir, shard), checkpoint.Options{})
		if c.PartOf == nil || c.PartOf.Name != index {
			t.Errorf("%s: part of %v, want %s", shard, c.PartOf, index)
		}
	}
}
