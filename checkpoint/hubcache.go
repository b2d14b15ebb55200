package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/wholefile"
)

// A HubRef is a Hugging Face repo id resolved in the local hub cache.
type HubRef struct {
	Repo string `json:"repo"`
	// Revision is the revision as typed ("main" when none was).
	Revision string `json:"revision"`
	// Commit is the commit it resolved to: the snapshot's directory name.
	Commit string `json:"commit"`
}

// hubRefLimit caps a ref file (refs/main), which holds a 40-digit commit.
var hubRefLimit = wholefile.Limit{Kind: "hub cache ref", Max: 1 << 10}

// isDirError reports a directory where a ref was looked for (refs/pr holds
// refs/pr/1): not a ref, so the revision is looked for among the commits.
func isDirError(err error) bool {
	var e *wholefile.Error
	return errors.As(err, &e) && e.Mode.IsDir()
}

var repoID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?(@[A-Za-z0-9._/-]+)?$`)
})

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

// LooksLikeRepoID reports whether s has the form of a repo id,
// "name" or "org/name", with an optional "@revision".
func LooksLikeRepoID(s string) bool { return repoID().MatchString(s) }

// ResolveHub finds the snapshot directory of a repo id "org/name[@revision]"
// (or "name[@revision]") in the hub cache. The revision is a branch or tag
// under refs/, a commit, or a unique prefix of a cached commit. On a miss
// the error lists what the cache holds.
func ResolveHub(id string) (dir string, ref *HubRef, err error) {
	repo, rev, _ := strings.Cut(id, "@")
	if rev == "" {
		rev = "main"
	}
	cache := HubCacheDir()
	base := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	if _, err := os.Stat(base); err != nil {
		return "", nil, fmt.Errorf("%s: no such file or directory, and repo %s is not in the hub cache %s", id, repo, cache)
	}
	refs := cachedRefs(base)
	snaps := cachedSnapshots(base)
	commit, ok := "", false
	if filepath.IsLocal(rev) {
		b, err := wholefile.ReadFile(filepath.Join(base, "refs", filepath.FromSlash(rev)), hubRefLimit)
		switch {
		case err == nil:
			commit, ok = strings.TrimSpace(string(b)), true
		case !errors.Is(err, fs.ErrNotExist) && !isDirError(err):
			// A FIFO, a device or a huge file where a ref belongs.
			return "", nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	if !ok {
		var matches []string
		for _, s := range snaps {
			if s == rev || (len(rev) >= 4 && strings.HasPrefix(s, rev)) {
				matches = append(matches, s)
			}
		}
		switch {
		case slices.Contains(matches, rev):
			commit, ok = rev, true
		case len(matches) == 1:
			commit, ok = matches[0], true
		case len(matches) > 1:
			return "", nil, fmt.Errorf("%s: revision %s is ambiguous in the hub cache: %s", id, rev, strings.Join(matches, ", "))
		}
	}
	if !ok {
		return "", nil, fmt.Errorf("%s: revision %s is not in the hub cache (cached refs: %s; cached commits: %s)",
			id, rev, listOrNone(refs), listOrNone(snaps))
	}
	if !filepath.IsLocal(commit) || strings.ContainsAny(commit, `/\`) {
		return "", nil, fmt.Errorf("%s: invalid revision %q in the hub cache", id, commit)
	}
	snap := filepath.Join(base, "snapshots", commit)
	if st, err := os.Stat(snap); err != nil || !st.IsDir() {
		return "", nil, fmt.Errorf("%s: revision %s resolves to commit %s, which is not in the hub cache (%s)", id, rev, commit, snap)
	}
	return snap, &HubRef{Repo: repo, Revision: rev, Commit: commit}, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// cachedRefs lists the refs a cached repo holds ("main", "refs/pr/3").
func cachedRefs(base string) []string {
	root := filepath.Join(base, "refs")
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		if len(out) > 100 {
			return errors.New("enough")
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// cachedSnapshots lists the commits a cached repo holds.
func cachedSnapshots(base string) []string {
	entries, _ := os.ReadDir(filepath.Join(base, "snapshots"))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// inHubCache reports whether path is inside the hub cache, where a
// dangling symlink is an interrupted download.
func inHubCache(path string) bool {
	cache := HubCacheDir()
	if cache == "" {
		return false
	}
	rel, err := filepath.Rel(cache, path)
	return err == nil && filepath.IsLocal(rel) && strings.HasPrefix(rel, "models--")
}
