package s3test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tools/s3fake"
)

// ckptcheckBin is the command the tests below run: $CKPTCHECK_BIN (make
// e2e sets it), or one built from this tree by TestMain. These tests were
// cmd/ckptcheck's, run in process there; they need the S3 fake, which
// lives in this module, so they run the binary instead.
var ckptcheckBin = os.Getenv("CKPTCHECK_BIN")

func TestMain(m *testing.M) {
	if ckptcheckBin != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "ckptcheck-s3test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ckptcheckBin = filepath.Join(dir, "ckptcheck")
	build := exec.Command("go", "build", "-o", ckptcheckBin, "./cmd/ckptcheck")
	build.Dir = filepath.Join("..", "..") // the main module
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "s3test: go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ckptcheck runs the command with args in the test's environment and
// returns its exit code and output.
func ckptcheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(ckptcheckBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestRemoteS3(t *testing.T) {
	root := t.TempDir()
	pub := filepath.Join(root, "bucket", "published")
	if err := fixture.WritePublished(pub, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "local")
	if err := os.CopyFS(local, os.DirFS(pub)); err != nil {
		t.Fatal(err)
	}
	// An export with changed values, in the bucket too.
	changed := filepath.Join(root, "bucket", "changed.safetensors")
	var ts []fixture.Tensor
	for _, tn := range fixture.Tiny.Tensors(safetensors.BF16) {
		ts = append(ts, fixture.Perturb(tn, safetensors.BF16, 0.5, 7))
	}
	if err := fixture.WriteFile(changed, ts, nil); err != nil {
		t.Fatal(err)
	}
	s, err := s3fake.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s3fake.Env(t, s.URL)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "--values", "s3://bucket/published", local}, 0, "OK"},
		{[]string{"validate", "s3://bucket/published"}, 0, "OK"},
		{[]string{"inspect", "s3://bucket/published/model-00001-of-00003.safetensors"}, 0, "shard_of_index"},
		{[]string{"diff", "--values", "s3://bucket/published", "s3://bucket/changed.safetensors"}, 1, "value_mismatch"},
		{[]string{"validate", "s3://bucket/nope.safetensors"}, 2, "s3://bucket/nope.safetensors: not found"},
	} {
		code, out, stderr := ckptcheck(t, tc.args...)
		if code != tc.code || !strings.Contains(out+stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s%s", tc.args, code, out, stderr)
		}
	}
}

// TestRemoteS3RedirectRefused: an S3 endpoint that redirects to another
// server holding the same objects is exit 2, naming the bucket and the
// Location, and the other server gets no request (no signed header left).
func TestRemoteS3RedirectRefused(t *testing.T) {
	root := t.TempDir()
	if err := fixture.WritePublished(filepath.Join(root, "bucket", "published"), fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	s, err := s3fake.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s3fake.Env(t, s.URL)
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		other, err := s3fake.New(root, host)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", host, err)
		}
		defer other.Close()
		s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return true
		})
		code, out, stderr := ckptcheck(t, "validate", "s3://bucket/published")
		if code != 2 || !strings.Contains(stderr, "bucket bucket: S3 answered HTTP 307") || !strings.Contains(stderr, `"`+other.URL+"/bucket") {
			t.Errorf("%s: exit %d\n%s%s", host, code, out, stderr)
		}
		if other.Requests() != 0 {
			t.Errorf("%s: the server redirected to got %+v", host, other.Log())
		}
	}
}

// medium is a Qwen3 whose shards (~11 MB of BF16) lie mostly past the
// bytes read at open, so that --values reads them by ranges, through the
// read-ahead.
var medium = fixture.Qwen3{Vocab: 4096, Hidden: 512, Layers: 2, Intermediate: 1536, Heads: 8, KVHeads: 4, HeadDim: 64, Tied: true, Seed: 5}

// TestRemoteValues: diff --values reads remote tensors by ranges, over
// http:// and s3://, and finds the same differences as locally.
func TestRemoteValues(t *testing.T) {
	root := t.TempDir()
	pub := filepath.Join(root, "bucket", "published")
	if err := fixture.WriteSharded(pub, medium.Tensors(safetensors.BF16), 2, medium.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	same, changed := filepath.Join(root, "same"), filepath.Join(root, "changed")
	if err := os.CopyFS(same, os.DirFS(pub)); err != nil {
		t.Fatal(err)
	}
	var ts []fixture.Tensor
	for _, tn := range medium.Tensors(safetensors.BF16) {
		if tn.Name == "model.layers.1.mlp.down_proj.weight" {
			tn = fixture.Perturb(tn, safetensors.BF16, 0.5, 7)
		}
		ts = append(ts, tn)
	}
	if err := fixture.WriteSharded(changed, ts, 2, medium.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	web, err := remotetest.NewServer(filepath.Join(root, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	s3, err := s3fake.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	s3fake.Env(t, s3.URL)
	for _, remote := range []string{web.URL + "/published/model.safetensors.index.json", "s3://bucket/published"} {
		web.Reset()
		s3.Reset()
		code, out, stderr := ckptcheck(t, "diff", "--values", "--format", "json", remote, same)
		if code != 0 || !strings.Contains(out, `"mismatched": 0`) || strings.Contains(out, `"compared": 0`) {
			t.Errorf("%s vs an identical copy: exit %d\n%s%s", remote, code, out, stderr)
		}
		if web.Bytes()+s3.Bytes() < 10<<20 {
			t.Errorf("%s: only %d bytes served: values not read remotely", remote, web.Bytes()+s3.Bytes())
		}
		code, out, stderr = ckptcheck(t, "diff", "--values", remote, changed)
		if code != 1 || !strings.Contains(out, "value_mismatch") || !strings.Contains(out, "model.layers.1.mlp.down_proj.weight") {
			t.Errorf("%s vs a changed copy: exit %d\n%s%s", remote, code, out, stderr)
		}
	}
}
