package safetensors

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var repoID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]+)?$`)

// HubCacheDir is the Hugging Face hub cache: $HF_HUB_CACHE, else
// $HF_HOME/hub, else ~/.cache/huggingface/hub.
func HubCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// resolve returns path itself when it exists, or the snapshot directory of a
// repo id "org/name[@revision]" in the hub cache.
func resolve(path string) (string, error) {
	_, statErr := os.Stat(path)
	if statErr == nil || !repoID.MatchString(path) {
		return path, statErr
	}
	repo, rev, _ := strings.Cut(path, "@")
	if rev == "" {
		rev = "main"
	}
	cache := HubCacheDir()
	base := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	if _, err := os.Stat(base); err != nil {
		return "", fmt.Errorf("%s: no such file, and repo %s is not in the hub cache %s", path, repo, cache)
	}
	commit := rev
	if ref, err := os.ReadFile(filepath.Join(base, "refs", rev)); err == nil {
		commit = strings.TrimSpace(string(ref))
	}
	if !filepath.IsLocal(commit) {
		return "", fmt.Errorf("%s: invalid revision %q in the hub cache", path, commit)
	}
	snap := filepath.Join(base, "snapshots", commit)
	if _, err := os.Stat(snap); err != nil {
		return "", fmt.Errorf("%s: revision %s is not in the hub cache (%s)", path, rev, snap)
	}
	return snap, nil
}
