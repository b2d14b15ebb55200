package e2e

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// ckptcheck is the binary under test: $CKPTCHECK_BIN (make e2e builds it),
// else built here once.
var ckptcheck string

// repoRoot is the repository, two levels up from this package.
var repoRoot, _ = filepath.Abs("../..")

func TestMain(m *testing.M) {
	if os.Getenv("CKPTCHECK_E2E") != "1" {
		fmt.Println("e2e: skipped (run make e2e, or set CKPTCHECK_E2E=1)")
		os.Exit(m.Run()) // every test skips itself
	}
	ckptcheck = os.Getenv("CKPTCHECK_BIN")
	if ckptcheck == "" {
		dir, err := os.MkdirTemp("", "ckptcheck-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer os.RemoveAll(dir)
		ckptcheck = filepath.Join(dir, "ckptcheck")
		build := exec.Command("go", "build", "-o", ckptcheck, "./cmd/ckptcheck")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

func needE2E(t *testing.T) {
	t.Helper()
	if os.Getenv("CKPTCHECK_E2E") != "1" {
		t.Skip("end-to-end: run make e2e (CKPTCHECK_E2E=1)")
	}
}

// artifacts is where the tests leave what a person may want to look at:
// $CKPTCHECK_E2E_ARTIFACTS, else a folder in the temporary directory.
func artifacts(t *testing.T) string {
	dir := os.Getenv("CKPTCHECK_E2E_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "ckptcheck-e2e")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scenarioModel is a 4-layer MoE model: 4 experts a layer, tied head.
var scenarioModel = func() fixture.Qwen3 {
	q := fixture.TinyMoE
	q.Layers = 4
	return q
}()

// The scenario's damage, which the page must show.
const (
	droppedKey = "model.layers.3.self_attn.k_norm.weight"
	reinitKey  = "model.layers.1.mlp.experts.2.down_proj.weight"
	nanKey     = "model.norm.weight"
	exactKey   = "model.layers.0.self_attn.q_proj.weight"
)

// writeScenario writes a published checkpoint (BF16, 3 shards) and an F32
// export of it after a pretend fine-tune: layer l drifted by about
// 10^(l-5) relative, one norm dropped, one expert re-initialized, a NaN in
// the final norm, the embedding and one projection untouched.
func writeScenario(t *testing.T, dir string) (pub, exp string) {
	t.Helper()
	q := scenarioModel
	pub, exp = filepath.Join(dir, "published"), filepath.Join(dir, "exported")
	if err := fixture.WritePublished(pub, q); err != nil {
		t.Fatal(err)
	}
	other := q
	other.Seed = 99
	var out []fixture.Tensor
	for i, tn := range q.Tensors(safetensors.BF16) {
		layer := -1
		fmt.Sscanf(tn.Name, "model.layers.%d.", &layer)
		switch {
		case tn.Name == droppedKey:
			continue
		case tn.Name == reinitKey:
			out = append(out, fixture.Upcast(other.Tensor(fixture.Spec{Name: tn.Name, Shape: tn.Shape}, safetensors.BF16)))
		case tn.Name == nanKey:
			out = append(out, fixture.Map(tn, safetensors.F32, func(i int, v float32) float32 {
				if i == 5 {
					return float32(math.NaN())
				}
				return v
			}))
		case layer < 0 || tn.Name == exactKey:
			out = append(out, fixture.Upcast(tn))
		default:
			out = append(out, fixture.Perturb(tn, safetensors.F32, math.Pow(10, float64(layer-5)), uint64(i)))
		}
	}
	if err := fixture.WriteFile(filepath.Join(exp, "model.safetensors"), out, nil); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteJSON(filepath.Join(exp, "config.json"), q.Config("float32")); err != nil {
		t.Fatal(err)
	}
	return pub, exp
}

// run runs the binary and returns its exit status and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(ckptcheck, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
