package remote

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// The redirects each client follows (README, "Credentials"): the Hub's
// client follows them, adding the token only on requests to the
// endpoint's exact origin; plain http(s) follows them with no credential
// to carry; neither goes from https to http or past 10 hops. S3 follows
// none (package s3's tests).

// TestHubAPIRedirectKeepsToken: the Hub API redirecting (as it does for a
// renamed repository) to another port on the same address, or another
// address, is followed without the token; the downloads, built on the
// endpoint, still carry it.
func TestHubAPIRedirectKeepsToken(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		t.Run(host, func(t *testing.T) {
			hub, dir := newHub(t, "")
			other, err := remotetest.NewHub(host)
			if err != nil {
				t.Skipf("cannot listen on %s: %v", host, err)
			}
			t.Cleanup(other.Close)
			other.Add("org/model", &remotetest.Repo{Dir: dir + "/repo", Commit: commitMain, Refs: map[string]string{"main": commitMain}})
			hub.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if !isAPI(r) {
					return false
				}
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return true
			})
			var w waits
			c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
			if len(c.Shards) != 3 || other.Requests() == 0 || !strings.HasPrefix(other.URL, "http://"+host+":") {
				t.Fatalf("%d shards, %d requests redirected", len(c.Shards), other.Requests())
			}
			for _, r := range other.Log() {
				if r.Authorization != "" {
					t.Errorf("%s got Authorization %q", r.Host, r.Authorization)
				}
			}
			for _, r := range hub.Log() {
				if !strings.HasPrefix(r.Path, "/api/") && r.Authorization != "Bearer "+hfToken {
					t.Errorf("a download without the token: %+v", r)
				}
			}
		})
	}
}

// TestHTTPRedirectFollowed: a plain https/http server's redirect to
// another server is followed (no credential goes with any request), and
// the file's later reads go to where it led.
func TestHTTPRedirectFollowed(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, t.TempDir())
	target := serve(t, dir)
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		remotetest.Redirect(w, r, target.URL)
		return true
	})
	var w waits
	c := openRemoteT(t, s.URL+"/model.safetensors.index.json", remoteOpts(&w))
	if len(c.Shards) != 3 || target.Requests() == 0 {
		t.Fatalf("%d shards, %d requests redirected", len(c.Shards), target.Requests())
	}
	for _, r := range append(s.Log(), target.Log()...) {
		if r.Authorization != "" {
			t.Errorf("Authorization %q sent to %s", r.Authorization, r.Host)
		}
	}
}

// TestCheckRedirect: never from https to http, at most 10 hops, and an
// Authorization header set on a request is dropped at the first hop.
func TestCheckRedirect(t *testing.T) {
	req := func(u string) *http.Request {
		p, _ := url.Parse(u)
		r := &http.Request{URL: p, Header: http.Header{}}
		r.Header.Set("Authorization", "Bearer x")
		return r
	}
	for _, tc := range []struct {
		from, to string
		hops     int
		want     string
	}{
		{"https://hub.example/a", "https://cdn.example/a", 1, ""},
		{"http://hub.example/a", "http://hub.example:8080/a", 1, ""},
		{"https://hub.example/a", "http://cdn.example/a", 1, "from https to plain http"},
		{"https://hub.example/a", "https://cdn.example/a", 10, "more than 10 redirects"},
	} {
		via := make([]*http.Request, tc.hops)
		for i := range via {
			via[i] = req(tc.from)
		}
		next := req(tc.to)
		err := checkRedirect(next, via)
		switch {
		case tc.want == "" && err != nil, tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s → %s after %d: %v", tc.from, tc.to, tc.hops, err)
		case err == nil && next.Header.Get("Authorization") != "":
			t.Errorf("%s → %s: Authorization kept", tc.from, tc.to)
		}
	}
}
