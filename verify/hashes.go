package verify

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// HashOptions tune CheckHashes.
type HashOptions struct {
	// Workers is how many files are hashed at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called with the bytes each read added, from
	// several goroutines.
	Progress func(n int64)
}

// HashWork lists the files at the root of c's source whose digest the
// source knows and that can be recomputed from their bytes, sorted by name:
// in a hub-cache snapshot, every file (its blob is named by its SHA-256 or
// git blob SHA-1). A partitioned run checks a subset. An empty list means
// there is nothing --hashes can check.
func HashWork(ctx context.Context, c *checkpoint.Checkpoint) ([]checkpoint.FileInfo, error) {
	entries, err := c.Entries(ctx)
	if err != nil {
		return nil, err
	}
	var out []checkpoint.FileInfo
	for _, fi := range entries {
		if fi.Digest.Verifiable() {
			out = append(out, fi)
		}
	}
	return out, nil
}

// CheckHashes reads each of files (HashWork's list, or a subset of it)
// once, one file per worker, and compares its bytes' digest with the one
// its source knows: hash_mismatch for each that differs (a download that
// reported success with corrupt bytes).
func CheckHashes(ctx context.Context, c *checkpoint.Checkpoint, files []checkpoint.FileInfo, opt HashOptions) ([]Finding, error) {
	jobs := make([]hashJob, 0, len(files))
	wants := make([]checkpoint.Digest, 0, len(files))
	for _, fi := range files {
		if !fi.Digest.Verifiable() {
			continue
		}
		jobs = append(jobs, hashJob{name: fi.Name, size: fi.Size, sha256: fi.Digest.Algo == checkpoint.SHA256, gitSHA1: fi.Digest.Algo == checkpoint.GitSHA1})
		wants = append(wants, fi.Digest)
	}
	results, err := hashFiles(ctx, c.Source, jobs, hashOptions{workers: opt.Workers, progress: opt.Progress})
	if err != nil {
		return nil, err
	}
	var out []Finding
	for i, j := range jobs {
		want := wants[i]
		got := hex.EncodeToString(results[i].sha256[:])
		what := "SHA-256"
		if j.gitSHA1 {
			got, what = hex.EncodeToString(results[i].gitSHA1[:]), "git blob SHA-1"
		}
		if got == want.Value {
			continue
		}
		out = append(out, Finding{Code: CodeHashMismatch, Severity: Error, File: c.Source.Path(j.name),
			Message: fmt.Sprintf("the bytes' %s is %s… but the file is stored as blob %s…: a corrupt download (delete the blob and download it again)",
				what, got[:12], want.Value[:12]),
			Expected: want.String(), Got: string(want.Algo) + ":" + got})
	}
	return out, nil
}
