package docscheck

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The layers of DESIGN.md ("Imports go down the layers, never up or
// sideways within a layer"), by import path below the module. A package
// may import one of a lower layer, or, within layer 2, the chain
// checkpoint → checkpoint/remote → checkpoint/remote/s3 downward only.
// internal/* production helpers are layer 0 (internal/xxh3, which asks
// internal/cpufeature, just above it, and internal/filehash, which hashes
// with internal/xxh3, above that); test-support packages
// (internal/fixture, internal/quantfixture, internal/remotetest) are no
// layer: no production
// package may import them.
var layers = []struct {
	prefix string // a package path, or a path ending in "/" for a subtree
	layer  float64
}{
	{"cmd/ckptcheck/", 8}, {"cmd/ckptcheck", 8},
	{"report", 7},
	{"manifest", 6},
	{"verify", 5},
	{"verify/internal/", 4}, {"partition", 4},
	{"adapter", 3},
	{"checkpoint", 2.0}, {"checkpoint/remote", 2.1}, {"checkpoint/remote/s3", 2.2},
	{"safetensors", 1}, {"gguf", 1}, {"torchsave", 1}, {"quant", 1}, {"quant/quanttest", 1.5},
	{"tensorfile", 0},
	{"internal/strictjson", 0}, {"internal/textfmt", 0}, {"internal/wholefile", 0},
	{"internal/filehash", 0.1}, {"internal/pickle", 0}, {"internal/miniyaml", 0}, {"internal/xxh3", 0.05},
	{"internal/cpufeature", 0},
}

const module = "github.com/ckptcheck/ckptcheck"

// repoRoot is the main module, two levels up from this package.
const repoRoot = "../.."

// layerOf is the layer of a package below the module, and whether it has
// one: the longest matching entry wins.
func layerOf(rel string) (float64, bool) {
	best, found, n := 0.0, false, -1
	for _, l := range layers {
		match := rel == l.prefix || (strings.HasSuffix(l.prefix, "/") && strings.HasPrefix(rel, l.prefix))
		if match && len(l.prefix) > n {
			best, found, n = l.layer, true, len(l.prefix)
		}
	}
	return best, found
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList lists the main module's packages (not their tests) with their
// imports and transitive dependencies.
func goList(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = repoRoot
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(&out)
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayers checks DESIGN.md's import rules on the main module: imports
// go down the layers; no production package imports test support or the
// tools module; checkpoint and checkpoint/remote do not reach the AWS SDK.
func TestLayers(t *testing.T) {
	pkgs := goList(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || strings.HasPrefix(rel, "testdata/") {
			continue
		}
		lp, layered := layerOf(rel)
		if !layered {
			if strings.HasPrefix(rel, "internal/") {
				continue // test support: checked below, from its importers
			}
			t.Errorf("%s has no layer in DESIGN.md's table (add it to this test and to DESIGN.md)", rel)
			continue
		}
		for _, imp := range p.Imports {
			irel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			li, ok := layerOf(irel)
			switch {
			case strings.HasPrefix(irel, "tools/"):
				t.Errorf("%s imports the tools module's %s", rel, irel)
			case !ok:
				t.Errorf("%s imports %s, which is test support, not a production package", rel, irel)
			case rel == "cmd/ckptcheck" && strings.HasPrefix(irel, "cmd/ckptcheck/internal/"):
				// the command's own internal packages
			case li >= lp && (int(li) != 2 || int(lp) != 2):
				t.Errorf("%s (layer %g) imports %s (layer %g): imports go down the layers", rel, lp, irel, li)
			case int(li) == 2 && int(lp) == 2 && li >= lp:
				t.Errorf("%s imports %s: within checkpoint the chain goes down, checkpoint → remote → s3", rel, irel)
			}
		}
		if rel == "checkpoint" || rel == "checkpoint/remote" || lp <= 1 {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/aws/") {
					t.Errorf("%s reaches the AWS SDK (%s): only checkpoint/remote/s3 may", rel, d)
					break
				}
			}
		}
	}
}

// TestMainModuleHasNoTestOnlyRequirements: the main go.mod lists only what
// the binary and the library need; test-only modules live in tools/go.mod.
func TestMainModuleHasNoTestOnlyRequirements(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, m := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/johannesboyne/gofakes3",
		"github.com/santhosh-tekuri/jsonschema", "github.com/nlpodyssey/safetensors", "honnef.co/go/tools"} {
		if strings.Contains(string(out), m) {
			t.Errorf("the main module requires %s, a test-only module: move it to tools/go.mod", m)
		}
	}
}
