package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// The Hugging Face Hub: hf://org/name[@revision][/subdir][/file] reads
// ENDPOINT/org/name/resolve/<commit>/<file> (RemoteOptions.Endpoint). The revision is resolved
// to a commit once, with the file listing, by the Hub's API
// (GET /api/models/org/name/revision/<revision>?blobs=True, as
// huggingface_hub's model_info(files_metadata=True) asks); every read then
// names that commit, so a push during the run cannot mix two versions.

// hubEndpoint is opt's Hub endpoint, without a trailing slash.
func hubEndpoint(opt *checkpoint.RemoteOptions) (*url.URL, error) {
	e := strings.TrimRight(opt.Endpoint, "/")
	if e == "" {
		e = checkpoint.DefaultHubEndpoint
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the Hub endpoint (HF_ENDPOINT) %q is not an http(s) URL", e)
	}
	return u, nil
}

// ErrMalformedToken is a Hub token that cannot be sent: a line break or
// another control character inside it. Net/http would refuse the header,
// which reads as a network failure; the token is never shown.
var ErrMalformedToken = errors.New("the Hub token is malformed")

// tokenProblem says what makes a Hub token unusable, "" when nothing does.
func tokenProblem(tok string) string {
	for _, r := range tok {
		switch {
		case r == '\r' || r == '\n':
			return "a line break"
		case r < 0x20 || r == 0x7f:
			return "a control character"
		case r == ' ':
			return "a space"
		case r > 0x7e:
			return "a character outside printable ASCII"
		}
	}
	return ""
}

// An hfRef is an hf:// path taken apart.
type hfRef struct {
	repo string // org/name
	rev  string // as given, decoded; "" when none was
	dir  string // the folder in the repository, "" for its root
	tg   target
}

var repoPart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// parseHF takes apart hf://org/name[@revision][/path]. A revision holding
// slashes (refs/pr/3) is given URL-encoded (refs%2Fpr%2F3).
func parseHF(p string) (hfRef, error) {
	rest := p[len("hf://"):]
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) < 2 {
		return hfRef{}, fmt.Errorf("%s: an hf:// path is hf://org/name[@revision][/folder or file]", p)
	}
	name, rev, hasRev := strings.Cut(parts[1], "@")
	if hasRev {
		r, err := url.PathUnescape(rev)
		if err != nil || r == "" {
			return hfRef{}, fmt.Errorf("%s: revision %q is not URL-encoded text", p, rev)
		}
		rev = r
	}
	if !repoPart().MatchString(parts[0]) || !repoPart().MatchString(name) {
		return hfRef{}, fmt.Errorf("%s: %q is not a repository id (org/name)", p, parts[0]+"/"+name)
	}
	ref := hfRef{repo: parts[0] + "/" + name, rev: rev}
	inRepo := strings.Join(parts[2:], "/")
	if inRepo != "" && checkpoint.UnsafePath(inRepo) != "" {
		return hfRef{}, fmt.Errorf("%s: %q is not a path inside the repository", p, inRepo)
	}
	ref.dir, ref.tg = splitTarget(inRepo)
	return ref, nil
}

// hubURL recognises a URL on the Hub's endpoint,
// ENDPOINT/org/name/resolve/<revision>/<file>, so that it is read as the
// hf:// path it is (the token goes with it, the commit is pinned).
func hubURL(u *url.URL, opt *checkpoint.RemoteOptions) (hfRef, bool) {
	ep, err := hubEndpoint(opt)
	if err != nil || originOf(u) != originOf(ep) {
		return hfRef{}, false
	}
	p := strings.TrimPrefix(u.EscapedPath(), strings.TrimRight(ep.EscapedPath(), "/"))
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) < 5 || parts[2] != "resolve" {
		return hfRef{}, false
	}
	rev, err := url.PathUnescape(parts[3])
	if err != nil {
		return hfRef{}, false
	}
	file, err := url.PathUnescape(strings.Join(parts[4:], "/"))
	if err != nil {
		return hfRef{}, false
	}
	ref, err := parseHF("hf://" + parts[0] + "/" + parts[1] + "/" + file)
	if err != nil || ref.tg == (target{}) {
		return hfRef{}, false
	}
	ref.rev = rev
	return ref, true
}

// openHFPath is the Opener of hf:// paths.
func openHFPath(ctx context.Context, p string, opt checkpoint.Options) (*checkpoint.Location, error) {
	ref, err := parseHF(p)
	if err != nil {
		return nil, err
	}
	switch {
	case ref.rev != "" && opt.Remote.Revision != "" && ref.rev != opt.Remote.Revision:
		return nil, fmt.Errorf("%s: the path says revision %s, --revision says %s", p, ref.rev, opt.Remote.Revision)
	case ref.rev == "":
		ref.rev = opt.Remote.Revision
	}
	return openHF(ctx, ref, &opt.Remote)
}

// openHF resolves the revision and lists the files. Offline, it reads the
// commit's snapshot in the local hub cache instead, with no request.
func openHF(ctx context.Context, ref hfRef, opt *checkpoint.RemoteOptions) (*checkpoint.Location, error) {
	if ref.rev == "" {
		ref.rev = "main"
	}
	name := hfDisplay(ref)
	if opt.Offline {
		return openHFOffline(ctx, ref, name)
	}
	ep, err := hubEndpoint(opt)
	if err != nil {
		return nil, err
	}
	if why := tokenProblem(opt.Token); why != "" {
		return nil, fmt.Errorf("%s: %w: it holds %s (a token is one word of printable ASCII, hf_…)", name, ErrMalformedToken, why)
	}
	auth := ""
	if opt.Token != "" {
		auth = "Bearer " + opt.Token
	}
	s := &hfSource{opt: opt, client: newHTTPClient(originOf(ep), auth, opt.Transport), endpoint: ep,
		repo: ref.repo, dir: ref.dir, display: name, hasToken: opt.Token != ""}
	s.OpenNow = s.openNow
	info, err := s.resolve(ctx, ref.rev)
	if err != nil {
		return nil, err
	}
	s.commit = info.SHA
	s.files = map[string]hubSibling{}
	var names []string
	for _, sb := range info.Siblings {
		rel := sb.Name
		if ref.dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(sb.Name, ref.dir+"/"); !ok {
				continue
			}
		}
		s.files[rel] = sb
		names = append(names, rel)
	}
	s.entries = Entries(names)
	snap := filepath.Join(checkpoint.HubCacheDir(), "models--"+strings.ReplaceAll(ref.repo, "/", "--"), "snapshots", info.SHA)
	if st, err := os.Stat(snap); err == nil && st.IsDir() && filepath.IsLocal(info.SHA) {
		s.snapshot = snap
	}
	if ref.tg == (target{}) && len(names) == 0 {
		return nil, fmt.Errorf("%s: no files at commit %s", name, info.SHA)
	}
	loc, err := Locate(ctx, s, ref.tg.name())
	if err != nil {
		return nil, err
	}
	loc.Hub = &checkpoint.HubRef{Repo: ref.repo, Revision: ref.rev, Commit: info.SHA}
	return loc, nil
}

// openHFOffline finds an hf:// path in the local hub cache: the snapshot
// of the commit its revision names there, read as a local directory.
func openHFOffline(ctx context.Context, ref hfRef, name string) (*checkpoint.Location, error) {
	snap, hub, err := checkpoint.ResolveHub(ref.repo + "@" + ref.rev)
	if err != nil {
		return nil, fmt.Errorf("%s: offline (HF_HUB_OFFLINE) and %w", name, err)
	}
	dir := checkpoint.Dir(filepath.Join(snap, filepath.FromSlash(ref.dir)))
	if n := ref.tg.name(); n != "" {
		f, err := dir.Open(ctx, n)
		if err != nil {
			return nil, pathError(dir.Path(n), err)
		}
		f.Close()
	}
	return &checkpoint.Location{Source: dir, Name: ref.tg.name(), Hub: hub,
		Remote: &checkpoint.Remote{Kind: "hf", Name: hfName(ref.repo, hub.Commit, ref.dir), Listed: true, Offline: true}}, nil
}

// hfDisplay is an hf:// path as reports name it, the revision as given.
func hfDisplay(ref hfRef) string {
	s := "hf://" + ref.repo
	if ref.rev != "" && ref.rev != "main" {
		s += "@" + url.PathEscape(ref.rev)
	}
	if ref.dir != "" {
		s += "/" + ref.dir
	}
	return s
}

// hfName is the resolved name: the repository at a commit.
func hfName(repo, commit, dir string) string {
	s := "hf://" + repo + "@" + commit
	if dir != "" {
		s += "/" + dir
	}
	return s
}

// An hfSource reads a repository folder at one commit: from the local hub
// cache when the file is there, else from the Hub.
type hfSource struct {
	Base
	opt      *checkpoint.RemoteOptions
	client   *http.Client
	endpoint *url.URL
	repo     string
	dir      string
	display  string
	commit   string
	hasToken bool
	snapshot string                // the hub cache's folder for the commit, "" when absent
	files    map[string]hubSibling // by name relative to dir
	entries  []checkpoint.Entry
}

// hubInfo is what the Hub's API says of a revision.
type hubInfo struct {
	SHA      string       `json:"sha"`
	Siblings []hubSibling `json:"siblings"`
}

type hubSibling struct {
	Name string `json:"rfilename"`
	Size *int64 `json:"size"`
	LFS  *struct {
		SHA256 string `json:"sha256"`
	} `json:"lfs"`
}

// maxHubAnswer bounds the Hub API's description of a revision: its file
// listing, with sizes and hashes, is a few hundred bytes a file.
const maxHubAnswer = 64 << 20

var commitID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// resolve asks the Hub which commit a revision is, and its files.
func (s *hfSource) resolve(ctx context.Context, rev string) (*hubInfo, error) {
	u := s.at("api", "models", s.repo, "revision", url.PathEscape(rev)) + "?blobs=True" // as huggingface_hub sends files_metadata=True
	ctx, cancel := context.WithTimeout(ctx, Timeout(s.opt))
	defer cancel()
	var info *hubInfo
	err := Retry(ctx, func() (err error) {
		info, err = s.resolveOnce(ctx, u, rev)
		return err
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

func (s *hfSource) resolveOnce(ctx context.Context, u string, rev string) (*hubInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "ckptcheck")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		inner := err
		if errors.As(err, &ue) {
			inner = ue.Err
		}
		temp, _ := retryable(inner)
		return nil, &Error{Path: s.display, Cause: "cannot reach the Hub at " + displayURL(s.endpoint) + ": " + NetCause(inner) +
			" (set HF_HUB_OFFLINE=1 to read the local hub cache only)", Temporary: temp, Err: inner}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		obj := &httpObject{display: s.display, refused: s.refused}
		err := obj.statusError(resp)
		var re *Error
		code := resp.Header.Get("X-Error-Code")
		switch {
		case !errors.As(err, &re):
		case code == "RevisionNotFound":
			re.Cause = fmt.Sprintf("revision %s not found in %s (HTTP %d)", rev, s.repo, resp.StatusCode)
		case code == "RepoNotFound" || resp.StatusCode == http.StatusNotFound:
			re.Cause = fmt.Sprintf("repository %s not found (HTTP %d)%s", s.repo, resp.StatusCode, s.tokenHint())
		}
		return nil, err
	}
	if resp.ContentLength > maxHubAnswer {
		return nil, &Error{Path: s.display, Cause: (&overLimitError{"the Hub's answer", maxHubAnswer}).Error()}
	}
	b, err := readCapped(resp.Body, maxHubAnswer, "the Hub's answer")
	if err != nil {
		// A connection dropped while reading is worth another try; an
		// answer over the limit is the same answer again.
		var over *overLimitError
		return nil, &Error{Path: s.display, Cause: err.Error(), Temporary: !errors.As(err, &over)}
	}
	var info hubInfo
	if err := json.Unmarshal(b, &info); err != nil || !commitID().MatchString(info.SHA) {
		return nil, &Error{Path: s.display, Cause: "the Hub's answer for revision " + rev + " is not a model's description with a commit id"}
	}
	return &info, nil
}

// at is a URL on the endpoint from path segments, escaped already.
func (s *hfSource) at(segments ...string) string {
	return strings.TrimRight(s.endpoint.String(), "/") + "/" + strings.Join(segments, "/")
}

func (s *hfSource) tokenHint() string {
	if s.hasToken {
		return ", or your token cannot see it"
	}
	return ", or private: set HF_TOKEN or log in with `hf auth login`"
}

// refused explains a 401/403 from the Hub: a gated repository (Llama,
// Gemma) whose licence the token's account has not accepted, or a private
// one.
func (s *hfSource) refused(status int, h http.Header) string {
	page := displayURL(s.endpoint.JoinPath(s.repo))
	gated := h.Get("X-Error-Code") == "GatedRepo" || strings.Contains(strings.ToLower(h.Get("X-Error-Message")), "gated") ||
		strings.Contains(strings.ToLower(h.Get("X-Error-Message")), "restricted")
	switch {
	case gated && s.hasToken:
		return fmt.Sprintf("%s is gated: accept its licence at %s with the account of your token", s.repo, page)
	case gated:
		return fmt.Sprintf("%s is gated: accept its licence at %s, then set HF_TOKEN (or log in with `hf auth login`)", s.repo, page)
	case s.hasToken:
		return fmt.Sprintf("the token cannot read %s: if it is gated, accept its licence at %s; if private, use a token with access", s.repo, page)
	}
	return fmt.Sprintf("%s is private or gated: set HF_TOKEN (or log in with `hf auth login`), and for a gated model accept its licence at %s", s.repo, page)
}

func (s *hfSource) Path(name string) string {
	if name == "." {
		return s.display
	}
	return s.display + "/" + name
}

// List lists the repository folder at the commit.
func (s *hfSource) List(ctx context.Context) ([]checkpoint.Entry, error) { return s.entries, nil }

func (s *hfSource) openNow(ctx context.Context, name string) (checkpoint.File, error) {
	full := path.Join(s.dir, name)
	sb, listed := s.files[name]
	v := checkpoint.FileVersion{Name: name}
	if listed && sb.LFS != nil {
		v.SHA256 = sb.LFS.SHA256
	}
	if s.snapshot != "" {
		if f, err := checkpoint.Dir(s.snapshot).Open(ctx, full); err == nil {
			v.Size, v.Cached = f.Size(), true
			s.Record(v)
			return f, nil
		}
	}
	if !listed {
		return nil, NotFound(s.Path(name), 0, fmt.Sprintf("not in %s at commit %s", s.repo, s.commit))
	}
	obj := &httpObject{client: s.client, url: s.at(s.repo, "resolve", s.commit, escapePath(full)), display: s.Path(name), refused: s.refused}
	f, err := s.OpenFile(ctx, s.Path(name), obj, Probe(name), s.opt, false)
	if err != nil {
		return nil, err
	}
	if sb.Size != nil && *sb.Size != f.size {
		return nil, &Error{Path: s.Path(name), Err: checkpoint.ErrChanged,
			Cause: fmt.Sprintf("the Hub lists %d bytes at commit %s, the download has %d", *sb.Size, s.commit, f.size)}
	}
	v.Size, v.ETag = f.size, f.etag
	s.Record(v)
	return f, nil
}

// Close closes the files opened ahead that nobody took, and the source's
// idle connections.
func (s *hfSource) Close() error { return closeSource(&s.Base, s.client, s.opt) }

// Remote says which commit was read, and the files.
func (s *hfSource) Remote() *checkpoint.Remote {
	return &checkpoint.Remote{Kind: "hf", Name: hfName(s.repo, s.commit, s.dir), Listed: true, Files: s.Versions()}
}
