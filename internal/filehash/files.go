package filehash

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sync"
)

// A Job is one file to read once, and what to compute over it.
type Job struct {
	Name string
	// Size is the file's size as listed; a file opened with another size
	// changed since.
	Size int64
	Want
}

// A File is an open file: checkpoint.File satisfies it.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Options tune Files.
type Options struct {
	// Workers is how many files are read at once; 0 means GOMAXPROCS.
	Workers int
	// Chunk is the read size; 0 means DefaultChunk.
	Chunk int
	// Progress, if set, is called with the bytes each read added, from
	// several goroutines.
	Progress func(n int64)
	// Path names a file in errors; nil names it by its Name.
	Path func(name string) string
	// Changed is wrapped by the error for a file whose size is not its
	// job's or that ends early (the caller's "input changed" sentinel).
	Changed error
}

// Files opens every job's file with open, reads it once and returns what
// each asked for, in the jobs' order; the first error cancels the rest. A
// file that cannot be read, or that holds fewer bytes than its size, is
// an error naming it.
func Files[F File](ctx context.Context, jobs []Job, open func(context.Context, string) (F, error), opt Options) ([]Sums, error) {
	results := make([]Sums, len(jobs))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	path := opt.Path
	if path == nil {
		path = func(name string) string { return name }
	}
	changed := opt.Changed
	if changed == nil {
		changed = errors.New("the file changed while it was read")
	}
	// Largest files first: the last file to start is then a small one.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[b].Size, jobs[a].Size) })
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			h := NewHasher(opt.Chunk)
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				r, err := sumFile(ctx, h, &jobs[i], open, path(jobs[i].Name), changed, opt.Progress)
				if err != nil {
					cancel(err)
					continue
				}
				results[i] = r
			}
		})
	}
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

func sumFile[F File](ctx context.Context, h *Hasher, j *Job, open func(context.Context, string) (F, error), path string, changed error, progress func(int64)) (Sums, error) {
	f, err := open(ctx, j.Name)
	if err != nil {
		return Sums{}, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	if f.Size() != j.Size {
		return Sums{}, fmt.Errorf("%s: %w (size %d → %d)", path, changed, j.Size, f.Size())
	}
	r, err := h.Sum(ctx, f, j.Size, j.Want, progress)
	var ended *EndError
	switch {
	case errors.As(err, &ended):
		return Sums{}, fmt.Errorf("%s: %w: %v", path, changed, ended)
	case err != nil && err != ctx.Err():
		return Sums{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, err
}

// unwrapPath drops an *fs.PathError's path, which the caller names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
