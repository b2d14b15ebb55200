package main

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func serveDir(t *testing.T, dir string) *remotetest.Server {
	t.Helper()
	s, err := remotetest.NewServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// copyDir copies a checkpoint folder's files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	os.MkdirAll(to, 0o755)
	entries, _ := os.ReadDir(from)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
}

func TestRemoteHTTP(t *testing.T) {
	root := t.TempDir()
	pub := filepath.Join(root, "srv", "published")
	if err := fixture.WritePublished(pub, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "local")
	copyDir(t, pub, local)
	s := serveDir(t, filepath.Join(root, "srv"))
	url := s.URL + "/published/"

	code, out, stderr := ckptcheck(t, "diff", "--values", "--format", "json", url, local)
	if code != 0 {
		t.Fatalf("diff --values over http: exit %d\n%s\n%s", code, out, stderr)
	}
	var rep struct {
		Inputs []struct {
			Path   string `json:"path"`
			Remote *struct {
				Kind, Name string
				Listed     bool
				Files      []struct{ Name, ETag string }
			} `json:"remote"`
		} `json:"inputs"`
		Findings []struct{ Code string } `json:"findings"`
		Values   struct {
			Compared int `json:"compared"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	r := rep.Inputs[0].Remote
	if r == nil || r.Kind != "http" || r.Name != url || r.Listed || len(r.Files) == 0 || r.Files[0].ETag == "" || rep.Inputs[1].Remote != nil {
		t.Errorf("inputs %+v", rep.Inputs)
	}
	if rep.Values.Compared == 0 {
		t.Errorf("no values compared: %s", out)
	}
	sawNotListable := false
	for _, f := range rep.Findings {
		sawNotListable = sawNotListable || f.Code == "not_listable"
	}
	if !sawNotListable {
		t.Errorf("the report does not say unreferenced shards were not looked for: %s", out)
	}

	// Exit statuses: a missing or refused path on the command line is 2,
	// a shard the index names that the server lacks is a finding (1).
	gone := filepath.Join(root, "srv", "gone")
	copyDir(t, pub, gone)
	os.Remove(filepath.Join(gone, "model-00002-of-00003.safetensors"))
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"validate", s.URL + "/nothing/model.safetensors"}, 2, s.URL + "/nothing/model.safetensors: not found (HTTP 404"},
		{[]string{"inspect", s.URL + "/nothing/"}, 2, "no model.safetensors.index.json or model.safetensors"},
		{[]string{"validate", s.URL + "/gone/model.safetensors.index.json"}, 1, ""},
		{[]string{"validate", "--timeout", "0s", url}, 2, "--timeout"},
		{[]string{"validate", "--revision", "v1", url}, 0, ""},
	} {
		code, out, stderr := ckptcheck(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q\n%s", tc.args, code, stderr, out)
		}
		if tc.code == 1 && !strings.Contains(out, "index_missing_shard") {
			t.Errorf("%v: %s", tc.args, out)
		}
	}
}

// TestRemoteStructuralDiffTransfer: a structural diff of a remote
// Qwen3-30B-A3B-shaped checkpoint (16 sparse shards, 61 GB claimed) reads
// at most 10% more than its index, config and headers.
func TestRemoteStructuralDiffTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two 61 GB sparse checkpoints")
	}
	root := t.TempDir()
	remote, local := filepath.Join(root, "remote"), filepath.Join(root, "local")
	for _, d := range []string{remote, local} {
		if err := fixture.WriteSparse(d, fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
			t.Fatal(err)
		}
	}
	need := int64(0)
	entries, _ := os.ReadDir(remote)
	for _, e := range entries {
		p := filepath.Join(remote, e.Name())
		if strings.HasSuffix(e.Name(), ".safetensors") {
			f, _ := os.Open(p)
			var n [8]byte
			f.Read(n[:])
			f.Close()
			need += 8 + int64(binary.LittleEndian.Uint64(n[:]))
		} else {
			st, _ := os.Stat(p)
			need += st.Size()
		}
	}
	s := serveDir(t, remote)
	code, out, stderr := ckptcheck(t, "diff", s.URL+"/model.safetensors.index.json", local)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	t.Logf("served %d bytes in %d requests for %d bytes of index, config and headers (%.3f×)", s.Bytes(), s.Requests(), need, float64(s.Bytes())/float64(need))
	if s.Bytes() > need+need/10 {
		t.Errorf("served %d bytes, more than 110%% of the %d needed", s.Bytes(), need)
	}
}

func TestRemoteHubGated(t *testing.T) {
	hub, err := remotetest.NewHub()
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := fixture.WritePublished(dir, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	commit := strings.Repeat("ab", 20)
	hub.Token = "hf_secret"
	hub.Add("meta/llama", &remotetest.Repo{Dir: dir, Commit: commit, Refs: map[string]string{"main": commit}, Gated: true})
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HF_TOKEN", "")
	code, _, stderr := ckptcheck(t, "validate", "hf://meta/llama")
	if code != 2 || !strings.Contains(stderr, "hf://meta/llama/") || !strings.Contains(stderr, "accept its licence at "+hub.URL+"/meta/llama") {
		t.Errorf("gated: exit %d, %q", code, stderr)
	}
	t.Setenv("HF_TOKEN", "hf_secret")
	code, out, stderr := ckptcheck(t, "validate", "--format", "json", "hf://meta/llama")
	if code != 0 || !strings.Contains(out, `"commit": "`+commit+`"`) || strings.Contains(out+stderr, "hf_secret") {
		t.Errorf("with the token: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRemoteTimeoutBound: against a server that trickles a byte at a
// time, --timeout bounds the run (a request, its retries included): exit
// 2 naming --timeout, long before six attempts' worth (asserted with
// slack for a busy machine).
func TestRemoteTimeoutBound(t *testing.T) {
	dir := t.TempDir()
	if err := fixture.WritePublished(dir, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	s := serveDir(t, dir)
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".safetensors") {
			return false
		}
		remotetest.Trickle(w, r, 1<<20, 50*time.Millisecond)
		return true
	})
	start := time.Now()
	code, _, stderr := ckptcheck(t, "validate", "--timeout", "1s", s.URL+"/model-00001-of-00003.safetensors")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v with --timeout 1s", took)
	}
	if code != 2 || !strings.Contains(stderr, "--timeout") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}
