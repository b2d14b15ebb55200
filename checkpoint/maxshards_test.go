package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// TestMaxShards: a folder of more than MaxShards *.safetensors files and
// no index is refused before any is opened (they are empty here: opening
// them would say header_too_small instead).
func TestMaxShards(t *testing.T) {
	n := checkpoint.MaxShards + 1
	dir := t.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%05d.safetensors", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
	if err == nil {
		c.Close()
	}
	want := fmt.Sprintf("%d *.safetensors files and no index, more than the %d shards ckptcheck opens", n, checkpoint.MaxShards)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%d files: %v", n, err)
	}
}
