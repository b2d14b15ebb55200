package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// installScript is the Action's installer.
var installScript = filepath.Join(repoRoot, ".github", "install.sh")

// runInstall runs install.sh with the runner's environment for this
// machine plus env; it returns the exit status and the output.
func runInstall(t *testing.T, mode string, env ...string) (int, string) {
	t.Helper()
	arch := map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH]
	cmd := exec.Command("bash", installScript, mode)
	cmd.Env = append(os.Environ(), "RUNNER_OS=Linux", "RUNNER_ARCH="+arch, "GITHUB_OUTPUT=", "GITHUB_PATH=", "CKPTCHECK_VERSION=", "CKPTCHECK_ACTION_REF=", "CKPTCHECK_ACTION_PATH=")
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

// fakeRelease lays out a release as make dist does: the binary under its
// release name (a script standing in for ckptcheck) and SHA256SUMS.
func fakeRelease(t *testing.T, sums func(name, sum string) string) (dir, asset string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "v1.2.3")
	os.MkdirAll(dir, 0o755)
	asset = "ckptcheck-linux-" + runtime.GOARCH
	bin := []byte("#!/bin/sh\necho 'ckptcheck v1.2.3 (fake release)'\n")
	os.WriteFile(filepath.Join(dir, asset), bin, 0o644)
	os.WriteFile(filepath.Join(dir, "ckptcheck-darwin-arm64"), []byte("other"), 0o644)
	sum := sha256.Sum256(bin)
	if s := sums(asset, hex.EncodeToString(sum[:])); s != "" {
		os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(s), 0o644)
	}
	return dir, asset
}

func TestInstallScriptResolve(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tt := range []struct {
		env  []string
		want []string
	}{
		{[]string{"CKPTCHECK_ACTION_REF=v1.2.3"}, []string{"mode=release", "version=v1.2.3", "asset=ckptcheck-linux-"}},
		{[]string{"CKPTCHECK_ACTION_REF=main", "CKPTCHECK_VERSION=0.4.1"}, []string{"mode=release", "version=v0.4.1"}},
		{[]string{"CKPTCHECK_ACTION_PATH=/w/_actions/ckptcheck/ckptcheck/v2.0.0-rc.1"}, []string{"mode=release", "version=v2.0.0-rc.1"}},
		{[]string{"CKPTCHECK_ACTION_REF=main"}, []string{"mode=source", "building ckptcheck from source"}},
		{[]string{"CKPTCHECK_ACTION_REF=16ef4a3a8d3b0a8e53194de93b6c37d79d90aaaa"}, []string{"mode=source"}},
		{[]string{"CKPTCHECK_ACTION_REF=v1"}, []string{"mode=source"}},
		{[]string{"CKPTCHECK_ACTION_REF=v1.2.3", "RUNNER_OS=Windows", "RUNNER_ARCH=ARM64"}, []string{"asset=ckptcheck-windows-arm64.exe"}},
		{[]string{"CKPTCHECK_ACTION_REF=v1.2.3", "RUNNER_OS=macOS", "RUNNER_ARCH=X64"}, []string{"asset=ckptcheck-darwin-amd64\n"}},
	} {
		code, out := runInstall(t, "resolve", tt.env...)
		for _, w := range tt.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%v: exit %d, want %q in\n%s", tt.env, code, w, out)
			}
		}
	}
	if code, out := runInstall(t, "resolve", "CKPTCHECK_ACTION_REF=v1.2.3", "RUNNER_ARCH=ARM"); code == 0 || !strings.Contains(out, "runner architecture 'ARM'") {
		t.Errorf("a 32-bit runner: exit %d\n%s", code, out)
	}
}

func TestInstallScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	right := func(name, sum string) string { return "0000  ckptcheck-darwin-arm64\n" + sum + "  " + name + "\n" }
	release, asset := fakeRelease(t, right)
	base := "file://" + filepath.Dir(release)
	install := func(t *testing.T, base, dir string) (int, string, string) {
		t.Helper()
		ghPath := filepath.Join(t.TempDir(), "path")
		code, out := runInstall(t, "install", "CKPTCHECK_VERSION=v1.2.3", "CKPTCHECK_DIR="+dir, "CKPTCHECK_RELEASE_URL="+base, "GITHUB_PATH="+ghPath)
		p, _ := os.ReadFile(ghPath)
		return code, out, string(p)
	}

	t.Run("right", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cache")
		code, out, ghPath := install(t, base, dir)
		if code != 0 || !strings.Contains(out, "installed in "+dir) || !strings.Contains(out, "ckptcheck v1.2.3 (fake release)") || ghPath != dir+"\n" {
			t.Fatalf("exit %d, GITHUB_PATH %q:\n%s", code, ghPath, out)
		}
		if st, err := os.Stat(filepath.Join(dir, "ckptcheck")); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("the binary: %v %v", st, err)
		}
		// A cache hit needs no release at all; a changed binary is fetched again.
		code, out, _ = install(t, "file:///nonexistent", dir)
		if code != 0 || !strings.Contains(out, "cached in") {
			t.Errorf("cache hit: exit %d\n%s", code, out)
		}
		os.WriteFile(filepath.Join(dir, "ckptcheck"), []byte("#!/bin/sh\necho tampered\n"), 0o755)
		code, out, _ = install(t, base, dir)
		if code != 0 || strings.Contains(out, "cached in") || !strings.Contains(out, "fake release") {
			t.Errorf("a changed cached binary: exit %d\n%s", code, out)
		}
	})

	t.Run("loopback HTTP", func(t *testing.T) {
		srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(release))))
		defer srv.Close()
		dir := filepath.Join(t.TempDir(), "cache")
		if code, out, _ := install(t, srv.URL, dir); code != 0 || !strings.Contains(out, "fake release") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})

	for _, tt := range []struct {
		name string
		sums func(name, sum string) string
		want string
	}{
		{"wrong", func(name, _ string) string { return strings.Repeat("ab", 32) + "  " + name + "\n" }, "SHA256SUMS says abab"},
		{"missing", func(string, string) string { return "" }, "has no SHA256SUMS"},
		{"not listed", func(string, string) string { return "0000  ckptcheck-darwin-arm64\n" }, "SHA256SUMS lists no " + asset},
	} {
		t.Run(tt.name, func(t *testing.T) {
			release, _ := fakeRelease(t, tt.sums)
			dir := filepath.Join(t.TempDir(), "cache")
			code, out, ghPath := install(t, "file://"+filepath.Dir(release), dir)
			if code == 0 || !strings.Contains(out, "::error title=ckptcheck install::") || !strings.Contains(out, tt.want) || ghPath != "" {
				t.Errorf("exit %d, GITHUB_PATH %q, want %q:\n%s", code, ghPath, tt.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "ckptcheck")); err == nil {
				t.Error("a binary that failed its check was installed")
			}
		})
	}
}
