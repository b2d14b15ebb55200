package remote

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

const (
	commitMain = "1111111111111111111111111111111111111111"
	commitPR   = "2222222222222222222222222222222222222222"
	hfToken    = "hf_test_token_secret"
)

// newHub starts a fake Hub for the test with one repository, "org/model",
// whose .safetensors downloads redirect to a CDN on cdnHost, and points
// the hub cache into the test's directory. hubOpts point at it.
func newHub(t *testing.T, cdnHost string) (*remotetest.Hub, string) {
	t.Helper()
	hub, err := remotetest.NewHub()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	if cdnHost != "" {
		if err := hub.WithCDN(cdnHost); err != nil {
			t.Skipf("cannot listen on %s: %v", cdnHost, err)
		}
	}
	hub.Token = hfToken
	dir := t.TempDir()
	writeTiny(t, filepath.Join(dir, "repo"))
	os.WriteFile(filepath.Join(dir, "repo", "stray.safetensors"), paddedFile(200), 0o644)
	hub.Add("org/model", &remotetest.Repo{Dir: filepath.Join(dir, "repo"), Commit: commitMain,
		Refs: map[string]string{"main": commitMain, "refs/pr/3": commitPR}})
	t.Setenv("HF_HUB_CACHE", filepath.Join(dir, "cache"))
	return hub, dir
}

// hubOpts are remoteOpts for hub, with its token.
func hubOpts(w *waits, hub *remotetest.Hub) testOpts {
	opt := remoteOpts(w)
	opt.Remote.Endpoint, opt.Remote.Token = hub.URL, hfToken
	return opt
}

func TestHFOpen(t *testing.T) {
	hub, _ := newHub(t, "127.0.0.2")
	var w waits
	c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
	if c.Index == nil || len(c.Shards) != 3 || c.Config == nil || c.NumTensors() == 0 {
		t.Fatalf("%+v", c)
	}
	if c.Hub == nil || c.Hub.Commit != commitMain || c.Hub.Revision != "main" || c.Hub.Repo != "org/model" {
		t.Errorf("hub ref %+v", c.Hub)
	}
	// The Hub lists files: the stray shard is found.
	if !slices.Equal(c.Unreferenced, []string{"stray.safetensors"}) || !c.Remote.Listed {
		t.Errorf("unreferenced %v, remote %+v", c.Unreferenced, c.Remote)
	}
	if c.Remote.Name != "hf://org/model@"+commitMain || c.Shards[0].Path != "hf://org/model/model-00001-of-00003.safetensors" {
		t.Errorf("names %q %q", c.Remote.Name, c.Shards[0].Path)
	}
	for _, v := range c.Remote.Files {
		if strings.HasSuffix(v.Name, ".safetensors") && len(v.SHA256) != 64 {
			t.Errorf("no LFS sha256 for %+v", v)
		}
	}
	// Every download names the commit, never the branch.
	for _, r := range hub.Log() {
		if strings.Contains(r.Path, "/resolve/") && !strings.Contains(r.Path, "/resolve/"+commitMain+"/") {
			t.Errorf("read not pinned to the commit: %s", r.Path)
		}
	}
	// The signed CDN URL is never shown.
	if strings.Contains(c.Shards[0].Path, "Signature") || strings.Contains(c.Remote.Name, "Signature") {
		t.Error("signed URL in a name")
	}
}

func TestHFRevisions(t *testing.T) {
	hub, _ := newHub(t, "")
	var w waits
	for _, tc := range []struct {
		path, flag, commit, err string
	}{
		{"hf://org/model@refs%2Fpr%2F3", "", commitPR, ""},
		{"hf://org/model", "refs/pr/3", commitPR, ""},
		{"hf://org/model@" + commitMain, "", commitMain, ""},
		{"hf://org/model@main/model.safetensors.index.json", "", commitMain, ""},
		{"hf://org/model@main", "refs/pr/3", "", "--revision says refs/pr/3"},
		{"hf://org/model@nope", "", "", "revision nope not found in org/model (HTTP 404)"},
		{"hf://org/other", "", "", "repository org/other not found"},
		{"hf://org", "", "", "hf://org/name"},
		{"hf://org/model/../x", "", "", "not a path inside"},
	} {
		opt := hubOpts(&w, hub)
		opt.Remote.Revision = tc.flag
		c, err := open(tc.path, opt)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if c.Hub.Commit != tc.commit {
			t.Errorf("%s: commit %s", tc.path, c.Hub.Commit)
		}
		c.Close()
	}
	// The revision API got refs/pr/3 as one encoded segment.
	found := false
	for _, r := range hub.Log() {
		found = found || strings.HasSuffix(r.Path, "/revision/refs/pr/3")
	}
	if !found {
		t.Error("refs/pr/3 was not asked for")
	}
}

func TestHFTokenStaysHome(t *testing.T) {
	// The Hub redirects .safetensors downloads to a CDN: on another host
	// (127.0.0.2), and on the same host on another port, where Go's client
	// would forward an Authorization header set on the request (net/http
	// client.go, shouldCopyHeaderOnRedirect, compares host names only, Go
	// 1.26). The token must reach the Hub and neither CDN.
	for _, host := range []string{"127.0.0.2", "127.0.0.1"} {
		t.Run(host, func(t *testing.T) {
			hub, _ := newHub(t, host)
			var w waits
			c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
			buf := make([]byte, 16)
			c.Shards[0].Safetensors().Tensors[0].Open().ReadAt(buf, 0)
			if hub.CDN.Requests() == 0 {
				t.Fatal("nothing was redirected")
			}
			for _, r := range hub.CDN.Log() {
				if r.Authorization != "" {
					t.Errorf("the CDN at %s got Authorization %q", r.Host, r.Authorization)
				}
			}
			sawToken := false
			for _, r := range hub.Log() {
				sawToken = sawToken || r.Authorization == "Bearer "+hfToken
			}
			if !sawToken {
				t.Error("the Hub never got the token")
			}
		})
	}
}

func TestHFRefused(t *testing.T) {
	hub, dir := newHub(t, "")
	hub.Add("meta/gated", &remotetest.Repo{Dir: filepath.Join(dir, "repo"), Commit: commitMain, Refs: map[string]string{"main": commitMain}, Gated: true})
	hub.Add("me/private", &remotetest.Repo{Dir: filepath.Join(dir, "repo"), Commit: commitMain, Refs: map[string]string{"main": commitMain}, Private: true})
	var w waits
	for _, tc := range []struct {
		path, token, want string
		is                error
	}{
		{"hf://meta/gated", "", "meta/gated is gated: accept its licence at " + hub.URL + "/meta/gated, then set HF_TOKEN", fs.ErrPermission},
		{"hf://meta/gated", "hf_other", "meta/gated is gated: accept its licence at " + hub.URL + "/meta/gated with the account of your token", fs.ErrPermission},
		{"hf://me/private", "", "HTTP 401", fs.ErrPermission},
		{"hf://meta/gated", hfToken, "", nil},
		{"hf://me/private", hfToken, "", nil},
	} {
		opt := hubOpts(&w, hub)
		opt.Remote.Token = tc.token
		c, err := open(tc.path, opt)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s with the token: %v", tc.path, err)
			} else {
				c.Close()
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("%s (token %q): %v\nwant %q", tc.path, tc.token, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), hfToken) {
			t.Error("the token is in the message")
		}
	}
}

func TestHFCacheAndOffline(t *testing.T) {
	hub, dir := newHub(t, "")
	// Put shard 1 and config.json of the commit in the hub cache, as the
	// hf CLI lays them out (snapshots link to blobs).
	snap := filepath.Join(dir, "cache", "models--org--model", "snapshots", commitMain)
	blobs := filepath.Join(dir, "cache", "models--org--model", "blobs")
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(blobs, 0o755)
	os.MkdirAll(filepath.Join(dir, "cache", "models--org--model", "refs"), 0o755)
	os.WriteFile(filepath.Join(dir, "cache", "models--org--model", "refs", "main"), []byte(commitMain), 0o644)
	for _, name := range []string{"model-00001-of-00003.safetensors", "config.json", "model.safetensors.index.json"} {
		b, _ := os.ReadFile(filepath.Join(dir, "repo", name))
		os.WriteFile(filepath.Join(blobs, "blob-"+name), b, 0o644)
		os.Symlink(filepath.Join("..", "..", "blobs", "blob-"+name), filepath.Join(snap, name))
	}
	var w waits
	c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
	for _, r := range hub.Log() {
		if strings.HasSuffix(r.Path, "model-00001-of-00003.safetensors") || strings.HasSuffix(r.Path, "config.json") {
			t.Errorf("a cached file was downloaded: %s", r.Path)
		}
	}
	cached := 0
	for _, v := range c.Remote.Files {
		if v.Cached {
			cached++
		}
	}
	if cached != 3 || len(c.Shards) != 3 || c.Shards[1].File == nil {
		t.Errorf("cached %d: %+v", cached, c.Remote.Files)
	}
	// Offline: only the cache, where shards 2 and 3 are missing.
	offline := hubOpts(&w, hub)
	offline.Remote.Offline = true
	hub.Reset()
	c = openRemoteT(t, "hf://org/model", offline)
	if hub.Requests() != 0 {
		t.Errorf("%d requests offline", hub.Requests())
	}
	if !c.Remote.Offline || c.Hub.Commit != commitMain || c.Shards[1].Status != checkpoint.ShardMissing || c.Shards[0].File == nil {
		t.Errorf("offline: %+v %+v", c.Remote, c.Shards[1])
	}
	if _, err := open("hf://org/model@v2", offline); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline, uncached revision: %v", err)
	}
}

func TestHubURL(t *testing.T) {
	hub, _ := newHub(t, "")
	var w waits
	ep := hub.URL
	c := openRemoteT(t, ep+"/org/model/resolve/refs%2Fpr%2F3/model.safetensors.index.json", hubOpts(&w, hub))
	if c.Hub == nil || c.Hub.Commit != commitPR || c.Remote.Kind != "hf" {
		t.Errorf("a resolve URL on the endpoint is read as hf://: %+v %+v", c.Hub, c.Remote)
	}
	for _, tc := range []struct {
		raw  string
		repo string
		ok   bool
	}{
		{ep + "/org/model/resolve/main/sub/x.safetensors", "org/model", true},
		{ep + "/org/model/blob/main/x.safetensors", "", false},
		{"http://127.0.0.9:1/org/model/resolve/main/x.safetensors", "", false},
		{ep + "/org/model/resolve/main/sub", "", false},
	} {
		u, _ := url.Parse(tc.raw)
		ref, ok := hubURL(u, &checkpoint.RemoteOptions{Endpoint: ep})
		if ok != tc.ok || ref.repo != tc.repo {
			t.Errorf("%s: %+v %v", tc.raw, ref, ok)
		}
	}
}

func TestParseHF(t *testing.T) {
	for _, tc := range []struct {
		in             string
		repo, rev, dir string
		tg             target
	}{
		{"hf://org/name", "org/name", "", "", target{}},
		{"hf://org/name@v1.0/sub/dir", "org/name", "v1.0", "sub/dir", target{}},
		{"hf://org/name@refs%2Fpr%2F3/model.safetensors", "org/name", "refs/pr/3", "", target{file: "model.safetensors"}},
		{"hf://org/name/sub/model.safetensors.index.json", "org/name", "", "sub", target{index: "model.safetensors.index.json"}},
	} {
		ref, err := parseHF(tc.in)
		if err != nil || ref.repo != tc.repo || ref.rev != tc.rev || ref.dir != tc.dir || ref.tg != tc.tg {
			t.Errorf("%s: %+v %v", tc.in, ref, err)
		}
	}
	for _, bad := range []string{"hf://", "hf://org", "hf://-x/y", "hf://org/na me", "hf://org/name@", "hf://org/name@%zz", "hf://org/name/../../etc"} {
		if _, err := parseHF(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzParseHF: any text parses or fails cleanly, and what parses names
// nothing outside the repository.
func FuzzParseHF(f *testing.F) {
	for _, s := range []string{"hf://org/name", "hf://org/name@refs%2Fpr%2F3/sub/x.safetensors", "hf://a/b/../c", "hf://a/b@/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "hf://") {
			s = "hf://" + s
		}
		ref, err := parseHF(s)
		if err != nil {
			return
		}
		if strings.Contains("/"+ref.dir+"/", "/../") || strings.HasPrefix(ref.dir, "/") {
			t.Errorf("%q: dir %q leaves the repository", s, ref.dir)
		}
		if ref.tg.file != "" && checkpoint.UnsafeName(ref.tg.file) != "" {
			t.Errorf("%q: file %q", s, ref.tg.file)
		}
	})
}
