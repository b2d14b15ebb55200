package verify

import (
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

// DCPCheckpoint opens a validated DCP step's model tensors as a
// checkpoint, for Diff: one shard per item file, read from the step's
// directory (a config.json beside .metadata is not read). A tensor's
// values are read from its chunks, assembled as pieces of the item files
// (torchsave.DCPModelFiles); one whose chunks cannot be is compared by
// name, shape and dtype (dcp_chunked). close releases the item files.
func DCPCheckpoint(step *DCPStep) (c *checkpoint.Checkpoint, close func(), err error) {
	items := &dcpItems{dir: step.Dir, open: map[string]*os.File{}}
	c = &checkpoint.Checkpoint{Path: step.Dir, Source: checkpoint.Dir(step.Dir)}
	if step.Metadata == nil {
		return c, items.close, nil
	}
	names, files, err := torchsave.DCPModelFiles(step.Metadata, func(rel string) (io.ReaderAt, int64, error) {
		f, size, err := items.file(rel)
		return f, size, err
	})
	if err != nil {
		items.close()
		return nil, nil, err
	}
	slices.Sort(names) // a checkpoint's shards are sorted by name
	for _, name := range names {
		f, _, err := items.file(name)
		if err != nil {
			items.close()
			return nil, nil, err
		}
		c.Shards = append(c.Shards, &checkpoint.Shard{Name: name, Path: filepath.Join(step.Dir, filepath.FromSlash(name)),
			Status: checkpoint.ShardOK, File: files[name], Header: files[name], Data: f})
	}
	return c, items.close, nil
}
