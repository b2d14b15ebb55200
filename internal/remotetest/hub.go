package remotetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A Repo is a repository of the fake Hub: a folder, at one commit.
type Repo struct {
	Dir    string
	Commit string // 40 hex digits
	// Refs maps branch and tag names ("main", "refs/pr/3") to commits.
	Refs map[string]string
	// Gated repositories list freely but refuse downloads without the
	// token (403 with X-Error-Code: GatedRepo, as the Hub answers).
	Gated bool
	// Private repositories answer 401 to anything without the token.
	Private bool
}

// A Hub is a fake Hugging Face Hub: the revision API
// (/api/models/ORG/NAME/revision/REV) and downloads
// (/ORG/NAME/resolve/REV/FILE). With a CDN, .safetensors downloads redirect
// there with a signed-looking query, as the Hub redirects LFS files.
type Hub struct {
	*Server
	// CDN, if set, serves the .safetensors files the Hub redirects to.
	CDN *Server
	// Token is what Authorization: Bearer must carry for gated and
	// private repositories.
	Token string

	mu    sync.Mutex
	repos map[string]*Repo
}

// NewHub starts a fake Hub on 127.0.0.1 (or on host, such as
// "127.0.0.2", when given).
func NewHub(host ...string) (*Hub, error) {
	s, err := NewServer("", host...)
	if err != nil {
		return nil, err
	}
	h := &Hub{Server: s, repos: map[string]*Repo{}}
	s.SetHandler(http.HandlerFunc(h.serve))
	return h, nil
}

// WithCDN starts a CDN server on host (e.g. "127.0.0.2") for the
// .safetensors downloads.
func (h *Hub) WithCDN(host string) error {
	cdn, err := NewServer("", host)
	if err != nil {
		return err
	}
	cdn.SetHandler(http.HandlerFunc(h.serveCDN))
	h.CDN = cdn
	return nil
}

// Close stops the Hub and its CDN.
func (h *Hub) Close() {
	h.Server.Close()
	if h.CDN != nil {
		h.CDN.Close()
	}
}

// Add adds a repository "org/name".
func (h *Hub) Add(id string, r *Repo) {
	h.mu.Lock()
	h.repos[id] = r
	h.mu.Unlock()
}

func (h *Hub) repo(id string) *Repo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repos[id]
}

func (h *Hub) authorized(r *http.Request) bool {
	return h.Token != "" && r.Header.Get("Authorization") == "Bearer "+h.Token
}

// commit resolves a revision of a repository, "" when unknown.
func (rp *Repo) commit(rev string) string {
	if rev == rp.Commit {
		return rev
	}
	for _, c := range rp.Refs {
		if rev == c {
			return c
		}
	}
	return rp.Refs[rev]
}

func segments(r *http.Request) []string {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	parts := segments(r)
	switch {
	case len(parts) == 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision":
		h.serveInfo(w, r, parts[2]+"/"+parts[3], parts[5])
	case len(parts) >= 5 && parts[2] == "resolve":
		h.serveResolve(w, r, parts[0]+"/"+parts[1], parts[3], strings.Join(parts[4:], "/"))
	default:
		http.NotFound(w, r)
	}
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

type sibling struct {
	Name string `json:"rfilename"`
	Size int64  `json:"size"`
	LFS  *lfs   `json:"lfs,omitempty"`
}

type lfs struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

func (h *Hub) serveInfo(w http.ResponseWriter, r *http.Request, id, rev string) {
	if !h.known(w, r, id) {
		return
	}
	rp := h.repo(id)
	commit := rp.commit(rev)
	if commit == "" {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	var sibs []sibling
	filepath.WalkDir(rp.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(rp.Dir, p)
		sb := sibling{Name: filepath.ToSlash(rel), Size: st.Size()}
		if strings.HasSuffix(rel, ".safetensors") {
			// Not the file's real sha256 (a sparse fixture is never read):
			// an id that changes with the file, standing in for one.
			sum := sha256.Sum256([]byte(ETag(st)))
			sb.LFS = &lfs{SHA256: hex.EncodeToString(sum[:]), Size: st.Size()}
		}
		sibs = append(sibs, sb)
		return nil
	})
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": id, "sha": commit, "siblings": sibs})
}

// known answers as the Hub does for a repository it will not show: 401
// without a token (it may be private), 404 with one.
func (h *Hub) known(w http.ResponseWriter, r *http.Request, id string) bool {
	rp := h.repo(id)
	if rp != nil && (!rp.Private || h.authorized(r)) {
		return true
	}
	if r.Header.Get("Authorization") != "" && (rp == nil || h.authorized(r)) {
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url")
	} else {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url")
	}
	return false
}

func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request, id, rev, file string) {
	if !h.known(w, r, id) {
		return
	}
	rp := h.repo(id)
	commit := rp.commit(rev)
	if commit == "" {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	if rp.Gated && !h.authorized(r) {
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list")
		return
	}
	if _, err := os.Stat(filepath.Join(rp.Dir, filepath.FromSlash(file))); err != nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", file+" does not exist")
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if h.CDN != nil && strings.HasSuffix(file, ".safetensors") {
		target := h.CDN.URL + "/" + id + "/" + commit + "/" + file + "?X-Amz-Signature=cdn-secret-signature&Expires=1"
		http.Redirect(w, r, target, http.StatusFound)
		return
	}
	ServeFile(w, r, rp.Dir, file)
}

// serveCDN serves /ORG/NAME/COMMIT/FILE for a signed query.
func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	parts := segments(r)
	if len(parts) < 4 || r.URL.Query().Get("X-Amz-Signature") != "cdn-secret-signature" {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	rp := h.repo(parts[0] + "/" + parts[1])
	if rp == nil || rp.commit(parts[2]) == "" {
		http.NotFound(w, r)
		return
	}
	ServeFile(w, r, rp.Dir, strings.Join(parts[3:], "/"))
}
