package manifest

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/partition"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// partialManifests builds the whole manifest of a three-shard model and
// its n partial manifests as manifest --partition i/n writes them, read
// back through JSON.
func partialManifests(t testing.TB, n int) (whole *Manifest, parts []*Manifest) {
	t.Helper()
	dir := t.TempDir()
	if err := fixture.WriteModel(dir, fixture.Tiny.Tensors(safetensors.BF16), 3, map[string]string{"tokenizer.json": `{"model": {}}`}); err != nil {
		t.Fatal(err)
	}
	c := openCheckpoint(t, dir)
	ctx := context.Background()
	all, err := Work(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	whole, err = Build(ctx, c, all, Options{Tool: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := partition.Partition{Index: i, Count: n}
		files, covered := SelectFiles(all, p)
		m, err := Build(ctx, c, files, Options{Tool: "test"})
		if err != nil {
			t.Fatal(err)
		}
		m.Partition = &Part{Partition: p, Fingerprint: FilesFingerprint(c, all, nil), Items: len(all), Files: covered}
		var b bytes.Buffer
		if err := m.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&b)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	return whole, parts
}

func inputs(ms []*Manifest) []Input {
	in := make([]Input, len(ms))
	for i, m := range ms {
		in[i] = Input{Name: fmt.Sprintf("part%d.json", i), Manifest: m}
	}
	return in
}

func TestMergeParts(t *testing.T) {
	whole, parts := partialManifests(t, 3)
	merged, err := MergeParts(inputs(parts))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged, whole) {
		t.Errorf("merged parts differ from the whole:\n%+v\n%+v", merged, whole)
	}
	if _, err := MergeParts(inputs(parts[:2])); err == nil || !strings.Contains(err.Error(), "partition 2 of 3 missing: a manifest needs every file") {
		t.Errorf("a part missing: %v", err)
	}
}

// TestMergePartsRefusesClaims gives MergeParts a partial manifest claiming
// counts or places no run makes: each is refused with one line, never a
// panic or an allocation sized by the number.
func TestMergePartsRefusesClaims(t *testing.T) {
	const huge = 1 << 62
	claims := []struct {
		name   string
		change func(p *Part)
		says   string
	}{
		{"count -1", func(p *Part) { p.Count = -1 }, "partition 0/-1 is not a partition"},
		{"count 2^62", func(p *Part) { p.Count = huge }, "is not a partition"},
		{"count 10^8", func(p *Part) { p.Count = 100_000_000 }, "is not a partition"},
		{"index -1", func(p *Part) { p.Index = -1 }, "partition -1/3 is not a partition"},
		{"items -1", func(p *Part) { p.Items = -1 }, "-1 files: the manifest is damaged"},
		{"items 2^62", func(p *Part) { p.Items = huge }, "files, but"},
		{"place -1", func(p *Part) { p.Files[0].At = -1 }, "file -1 of"},
		{"place 2^62", func(p *Part) { p.Files[0].At = huge }, "file 4611686018427387904 of"},
		{"a file twice", func(p *Part) { p.Files = append(p.Files, p.Files[0]) }, "both cover file"},
		{"no partition", nil, "part0.json: not a partial manifest"},
	}
	for _, c := range claims {
		t.Run(c.name, func(t *testing.T) {
			_, parts := partialManifests(t, 3)
			damaged := *parts[0]
			if c.change == nil {
				damaged.Partition = nil
			} else {
				dp := *damaged.Partition
				dp.Files = slices.Clone(dp.Files)
				c.change(&dp)
				damaged.Partition = &dp
			}
			parts[0] = &damaged
			_, err := MergeParts(inputs(parts))
			if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v; want one line saying %q", err, c.says)
			}
		})
	}
}

func TestIsManifest(t *testing.T) {
	whole, _ := partialManifests(t, 1)
	var indented bytes.Buffer
	whole.WriteJSON(&indented)
	tests := []struct {
		name string
		doc  string
		want bool
	}{
		{"as written", indented.String(), true},
		{"jq -c", `{"schema":"ckptcheck.manifest/v1","tool":"t","files":[],"tensors":[]}`, true},
		{"schema last", `{"tool": "t", "files": [{"name": "a", "size": 1}], "tensors": [], "schema" :  "ckptcheck.manifest/v1"}`, true},
		{"escaped", `{"schema": "ckptcheck.manifest\/v1"}`, true},
		{"a report", `{"schema": "ckptcheck.report/v1", "command": "validate"}`, false},
		{"a report quoting the schema", `{"schema": "ckptcheck.report/v1", "findings": [{"message": "\"schema\": \"ckptcheck.manifest/v1\""}]}`, false},
		{"schema in a member", `{"inputs": {"schema": "ckptcheck.manifest/v1"}}`, false},
		{"schema not a string", `{"schema": 1}`, false},
		{"an array", `["ckptcheck.manifest/v1"]`, false},
		{"not JSON", `{"schema": `, false},
		{"not UTF-8", "{\"schema\": \"\xff\"}", false},
		{"empty", ``, false},
		{"deep", strings.Repeat("[", 1000), false},
	}
	for _, tt := range tests {
		if got := IsManifest([]byte(tt.doc)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzMergeParts feeds MergeParts a damaged partial manifest beside good
// ones (the seeds are the parts the tests produce): it is refused with one
// line or merged, never a panic, and a merged manifest lists each file
// once.
func FuzzMergeParts(f *testing.F) {
	_, good := partialManifests(f, 3)
	for _, m := range good {
		var b bytes.Buffer
		m.WriteJSON(&b)
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"schema":"ckptcheck.manifest/v1","partition":{"index":1,"count":4611686018427387904,"items":-1,"files":[{"at":-5}]},"files":[],"tensors":[]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		m, err := Read(bytes.NewReader(doc))
		if err != nil {
			return
		}
		merged, err := MergeParts([]Input{{"good0", good[0]}, {"fuzzed", m}, {"good2", good[2]}})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a message of more than one line: %q", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, f := range merged.Files {
			if seen[f.Name] {
				t.Fatalf("%s merged twice", f.Name)
			}
			seen[f.Name] = true
		}
	})
}
