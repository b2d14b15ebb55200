package manifest

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/filehash"
	"github.com/ckptcheck/ckptcheck/verify"
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
func CheckHashes(ctx context.Context, c *checkpoint.Checkpoint, files []checkpoint.FileInfo, opt HashOptions) ([]verify.Finding, error) {
	jobs := make([]filehash.Job, 0, len(files))
	wants := make([]checkpoint.Digest, 0, len(files))
	for _, fi := range files {
		if !fi.Digest.Verifiable() {
			continue
		}
		jobs = append(jobs, filehash.Job{Name: fi.Name, Size: fi.Size, Want: filehash.Want{SHA256: fi.Digest.Algo == checkpoint.SHA256, GitSHA1: fi.Digest.Algo == checkpoint.GitSHA1}})
		wants = append(wants, fi.Digest)
	}
	results, err := hashFiles(ctx, c.Source, jobs, opt.Workers, opt.Progress)
	if err != nil {
		return nil, err
	}
	var out []verify.Finding
	for i, j := range jobs {
		want := wants[i]
		got := hex.EncodeToString(results[i].SHA256[:])
		what := "SHA-256"
		if j.GitSHA1 {
			got, what = hex.EncodeToString(results[i].GitSHA1[:]), "git blob SHA-1"
		}
		if got == want.Value {
			continue
		}
		out = append(out, verify.Finding{Code: verify.CodeHashMismatch, Severity: verify.Error, File: c.Source.Path(j.Name),
			Message: fmt.Sprintf("the bytes' %s is %s… but the file is stored as blob %s…: a corrupt download (delete the blob and download it again)",
				what, got[:12], want.Value[:12]),
			Expected: want.String(), Got: string(want.Algo) + ":" + got})
	}
	return out, nil
}
