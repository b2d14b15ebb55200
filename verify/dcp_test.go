package verify

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

const dcpFixtures = "../testdata/dcp"

func TestValidateDCP(t *testing.T) {
	// A copy of the good step whose item file lost its tail.
	short := t.TempDir()
	for _, name := range []string{".metadata", "__0_0.distcp"} {
		b, err := os.ReadFile(filepath.Join(dcpFixtures, "good", name))
		if err != nil {
			t.Fatal(err)
		}
		if name != ".metadata" {
			b = b[:len(b)-100]
		}
		if err := os.WriteFile(filepath.Join(short, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hostile := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostile, ".metadata"), []byte("\x80\x02cposix\nsystem\nX\x01\x00\x00\x00x\x85R."), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		codes     []Code
		key, msg  string
	}{
		{"good", filepath.Join(dcpFixtures, "good"), nil, "", ""},
		{"gap", filepath.Join(dcpFixtures, "gap"), []Code{CodeDCPChunkGap}, "model.w", "[3:4, 0:6]"},
		{"overlap", filepath.Join(dcpFixtures, "overlap"), []Code{CodeDCPChunkOverlap}, "model.w", "[1:2, 0:6]"},
		{"transform", filepath.Join(dcpFixtures, "transform"), []Code{CodeDCPUnsupportedTransform}, "model.w", `transform "stream.zstd"`},
		{"short item file", short, []Code{CodeDCPBadMetadata}, "optimizer.state.model.w.exp_avg", "reaches past the file"},
		{"hostile", hostile, []Code{CodeUnsafePickle}, "", "posix.system"},
	} {
		if !IsDCPDir(tc.dir) {
			t.Errorf("%s: not a DCP directory", tc.name)
		}
		_, fs, err := ValidateDCP(tc.dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var codes []Code
		for _, f := range fs {
			codes = append(codes, f.Code)
			if f.Key != tc.key || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("%s: finding %+v; want key %q and %q", tc.name, f, tc.key, tc.msg)
			}
		}
		if !slices.Equal(codes, tc.codes) {
			t.Errorf("%s: codes %v, want %v", tc.name, codes, tc.codes)
		}
	}
	if IsDCPDir(filepath.Join(dcpFixtures, "gen.py")) || IsDCPDir(dcpFixtures) {
		t.Error("a file, or a folder without .metadata, is a DCP directory")
	}
}

// dcpExpected writes testdata/dcp/expected.json (the sharded step's
// tensors as torch held them) as one safetensors file.
func dcpExpected(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dcpFixtures, "expected.json"))
	must(t, err)
	var exp map[string]struct {
		DType string   `json:"dtype"`
		Shape []uint64 `json:"shape"`
		Hex   string   `json:"hex"`
	}
	must(t, json.Unmarshal(b, &exp))
	path := filepath.Join(t.TempDir(), "model.safetensors")
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	w := safetensors.NewWriter(f)
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		e := exp[name]
		data, err := hex.DecodeString(e.Hex)
		must(t, err)
		d, _ := safetensors.ParseDType(e.DType)
		must(t, w.Add(name, d, e.Shape, data))
	}
	must(t, w.Close())
	return path
}

// TestDiffDCPChunks: a step saved by two ranks, its tensors in chunks
// along dim 0, dim 1, a grid, a stack's middle dim, and as transposed
// views, compares value by value with the tensors torch held; the same
// step whose metadata exchanged two chunks' items (a tile of a grid, a
// row shard) is caught, tensor by tensor.
func TestDiffDCPChunks(t *testing.T) {
	pub := openCheckpoint(t, dcpExpected(t))
	for _, tc := range []struct {
		step       string
		mismatched []string
	}{
		{"sharded", nil},
		{"swapped", []string{"model.grid", "model.rows"}},
	} {
		step, fs, err := ValidateDCP(filepath.Join(dcpFixtures, tc.step))
		must(t, err)
		if len(fs) > 0 {
			t.Errorf("%s: %v", tc.step, notable(fs))
		}
		exp, closeStep, err := DCPCheckpoint(step)
		must(t, err)
		defer closeStep()
		d, err := Diff(context.Background(), pub, exp, DiffOptions{WeightsOnly: true})
		must(t, err)
		rep, err := d.CompareValues(context.Background(), ValueOptions{})
		must(t, err)
		var got []string
		for _, f := range append(d.Findings, rep.Findings...) {
			if f.Code == CodeValueMismatch || f.Code == CodeReinitialized {
				got = append(got, f.Key)
			} else if f.Severity != Info && f.Code != CodeWeightsOnlyExport {
				t.Errorf("%s: %s %s %s", tc.step, f.Code, f.Key, f.Message)
			}
		}
		slices.Sort(got)
		if rep.Compared != 7 || !slices.Equal(got, tc.mismatched) {
			t.Errorf("%s: %d compared, mismatched %v; want 7, %v", tc.step, rep.Compared, got, tc.mismatched)
		}
	}
}

// TestDiffDCPSafetensorsItems: a step whose ranks wrote their chunks as
// safetensors blobs (FileSystemWriter's serialization_format=SAFETENSORS)
// after a byte item validates and compares value by value with the
// tensors torch held; a blob whose entry disagrees with the metadata is
// a dcp_bad_metadata error naming the tensor.
func TestDiffDCPSafetensorsItems(t *testing.T) {
	dir := filepath.Join(dcpFixtures, "safetensors")
	step, fs, err := ValidateDCP(dir)
	must(t, err)
	if len(fs) > 0 {
		t.Errorf("validate: %v", notable(fs))
	}
	exp, closeStep, err := DCPCheckpoint(step)
	must(t, err)
	defer closeStep()
	d, err := Diff(context.Background(), openCheckpoint(t, dcpExpected(t)), exp, DiffOptions{WeightsOnly: true})
	must(t, err)
	rep, err := d.CompareValues(context.Background(), ValueOptions{})
	must(t, err)
	// The step holds five of the seven tensors, and the trainer's state:
	// optimizer, lr_scheduler, dataloader and train_state entries are
	// listed by inspect and are no unexpected keys.
	var missing []string
	for _, f := range append(d.Findings, rep.Findings...) {
		switch {
		case f.Code == CodeMissingKey:
			missing = append(missing, f.Key)
		case f.Severity != Info && f.Code != CodeWeightsOnlyExport:
			t.Errorf("%s %s %s", f.Code, f.Key, f.Message)
		}
	}
	slices.Sort(missing)
	if want := []string{"model.grid", "model.tview"}; !slices.Equal(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	ins := InspectDCP(step, nil, false)
	for _, part := range []string{"optimizer", "lr_scheduler", "dataloader", "train_state"} {
		if ins.Totals.Metadata["dcp."+part] != "1 entry, not weights" {
			t.Errorf("inspect: dcp.%s = %q, want 1 entry", part, ins.Totals.Metadata["dcp."+part])
		}
	}
	if ins.Totals.Tensors != 5 {
		t.Errorf("inspect: %d tensors, want the model's 5", ins.Totals.Tensors)
	}
	if rep.Compared != 5 || rep.Mismatched != 0 {
		t.Errorf("%d compared, %d mismatched; want 5 and none", rep.Compared, rep.Mismatched)
	}

	// model.one's entry in rank 1's blob says F16 where the metadata says F32.
	bad := t.TempDir()
	for _, name := range []string{".metadata", "__0_0.distcp", "__1_0.distcp"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		must(t, err)
		if name == "__1_0.distcp" {
			i := strings.Index(string(b), `"model.one":{"dtype":"F32"`)
			if i < 0 {
				t.Fatal("no model.one entry in rank 1's blob")
			}
			copy(b[i:], `"model.one":{"dtype":"I32"`)
		}
		must(t, os.WriteFile(filepath.Join(bad, name), b, 0o644))
	}
	_, fs, err = ValidateDCP(bad)
	must(t, err)
	if len(fs) != 1 || fs[0].Code != CodeDCPBadMetadata || fs[0].Key != "model.one" || !strings.Contains(fs[0].Message, "I32 [3], want F32 [3]") {
		t.Errorf("findings %+v; want one dcp_bad_metadata on model.one", fs)
	}
}
