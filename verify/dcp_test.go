package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
