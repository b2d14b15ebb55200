package manifest

import (
	"context"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/filehash"
)

// hashFiles reads every job's file through src once (see filehash.Files),
// workers files at a time (0: GOMAXPROCS).
func hashFiles(ctx context.Context, src checkpoint.Source, jobs []filehash.Job, workers int, progress func(int64)) ([]filehash.Sums, error) {
	return filehash.Files(ctx, jobs, src.Open, filehash.Options{Workers: workers, Progress: progress, Path: src.Path, Changed: checkpoint.ErrChanged})
}
