package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// TestHubCacheOfCopies: on Windows without symlink rights, huggingface_hub
// fills a snapshot with copies of the blobs instead of links. The repo id
// resolves the same; the files just carry no digest from the layout.
func TestHubCacheOfCopies(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Chdir(t.TempDir())
	base := filepath.Join(cache, "models--org--copies")
	snap := filepath.Join(base, "snapshots", "c0ffee00")
	writeFile(t, filepath.Join(snap, "model.safetensors"), vec("w", 2))
	os.MkdirAll(filepath.Join(base, "refs"), 0o755)
	os.WriteFile(filepath.Join(base, "refs", "main"), []byte("c0ffee00"), 0o644)
	c := open(t, "org/copies", checkpoint.Options{})
	if c.Hub == nil || c.Hub.Commit != "c0ffee00" || c.NumTensors() != 1 || c.Shards[0].Status != checkpoint.ShardOK {
		t.Fatalf("hub %+v, %d tensors, shards %+v", c.Hub, c.NumTensors(), c.Shards)
	}
	info, err := checkpoint.Dir(snap).Stat(context.Background(), "model.safetensors")
	if err != nil || !info.Digest.IsZero() || info.Size == 0 {
		t.Errorf("a copy: %+v, %v", info, err)
	}
}
