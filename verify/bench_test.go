//go:build linux

package verify

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

var (
	moeOnce sync.Once
	moeDir  string
	moeErr  error
)

// moeCheckpoint writes the Qwen3-30B-A3B-shaped sparse checkpoint (16 shards,
// 18,867 tensors, 61 GB of holes) once per benchmark run.
func moeCheckpoint(b *testing.B) string {
	moeOnce.Do(func() {
		moeDir, moeErr = os.MkdirTemp("", "ckptcheck-bench-moe-")
		if moeErr == nil {
			moeErr = fixture.WriteSparse(moeDir, fixture.Qwen3MoE30B, safetensors.BF16, 16)
		}
	})
	if moeErr != nil {
		b.Fatal(moeErr)
	}
	return moeDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if moeDir != "" {
		os.RemoveAll(moeDir)
	}
	if finetuneDir != "" {
		os.RemoveAll(finetuneDir)
	}
	os.Exit(code)
}

// BenchmarkValidateMoE is `ckptcheck validate` without the printing.
func BenchmarkValidateMoE(b *testing.B) {
	dir := moeCheckpoint(b)
	for b.Loop() {
		c, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if fs, err := Validate(context.Background(), c); err != nil || len(fs) != 0 {
			b.Fatal(fs)
		}
		c.Close()
	}
}

// BenchmarkDiffMoE is verify.Diff alone (headers already read) on two
// Qwen3-30B-A3B-shaped checkpoints, BF16 against F32.
func BenchmarkDiffMoE(b *testing.B) {
	pubDir := moeCheckpoint(b)
	expDir := filepath.Join(b.TempDir(), "exp")
	if err := fixture.WriteSparse(expDir, fixture.Qwen3MoE30B, safetensors.F32, 16); err != nil {
		b.Fatal(err)
	}
	pub, exp := openCheckpoint(b, pubDir), openCheckpoint(b, expDir)
	for b.Loop() {
		if _, err := Diff(context.Background(), pub, exp, DiffOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValuesUpcast compares a BF16 tensor with its exact F32 upcast
// (32M elements: 64 MiB against 128 MiB), page cache warm.
func BenchmarkValuesUpcast(b *testing.B) {
	benchValues(b, func(t fixture.Tensor) fixture.Tensor { return fixture.Upcast(t) })
}

// BenchmarkValuesPerturbed compares BF16 with a ~1e-3 perturbation of it,
// which takes the full decoding path.
func BenchmarkValuesPerturbed(b *testing.B) {
	benchValues(b, func(t fixture.Tensor) fixture.Tensor { return fixture.Perturb(t, safetensors.BF16, 1e-3, 1) })
}

func benchValues(b *testing.B, transform func(fixture.Tensor) fixture.Tensor) {
	dir := b.TempDir()
	q := fixture.Qwen3{Vocab: 32768, Hidden: 1024, Seed: 1, Tied: true}
	spec := q.Specs()[0]
	pub := q.Tensor(spec, safetensors.BF16)
	exp := transform(pub)
	if err := fixture.WriteFile(filepath.Join(dir, "p.safetensors"), []fixture.Tensor{pub}, nil); err != nil {
		b.Fatal(err)
	}
	if err := fixture.WriteFile(filepath.Join(dir, "e.safetensors"), []fixture.Tensor{exp}, nil); err != nil {
		b.Fatal(err)
	}
	d := diffPaths(b, filepath.Join(dir, "p.safetensors"), filepath.Join(dir, "e.safetensors"), DiffOptions{})
	b.SetBytes(int64(len(pub.Data) + len(exp.Data)))
	for b.Loop() {
		if _, err := d.CompareValues(context.Background(), ValueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// moeLayout is Qwen3-30B-A3B's tensor layout (48 layers of 128 experts,
// 18,867 tensors) with its dimensions scaled down, so that a benchmark can
// really compare its values: what merging costs grows with the tensors and
// findings, not with their bytes.
var moeLayout = func() fixture.Qwen3 {
	q := fixture.Qwen3MoE30B
	q.Vocab, q.Hidden, q.Heads, q.KVHeads, q.HeadDim, q.Intermediate, q.MoEIntermediate = 512, 32, 4, 2, 8, 64, 8
	return q
}()

// BenchmarkMerge16MoE reads back and merges the 16 partition reports of
// diff --values on the MoE layout, BF16 against a perturbed F32 export (a
// dtype warning on every tensor: partition 0 carries 18,867 structural
// findings), as ckptcheck merge does before rendering.
func BenchmarkMerge16MoE(b *testing.B) {
	dir := b.TempDir()
	q := moeLayout
	pubT := q.Tensors(safetensors.BF16)
	expT := make([]fixture.Tensor, len(pubT))
	for i, t := range pubT {
		expT[i] = fixture.Perturb(t, safetensors.F32, 1e-3, uint64(i))
	}
	pub, exp := filepath.Join(dir, "pub"), filepath.Join(dir, "exp")
	if err := fixture.WriteSharded(pub, pubT, 16, q.Config("bfloat16")); err != nil {
		b.Fatal(err)
	}
	if err := fixture.WriteSharded(exp, expT, 16, q.Config("float32")); err != nil {
		b.Fatal(err)
	}
	d := diffPaths(b, pub, exp, DiffOptions{})
	policy := ValuePolicy{Default: Tolerance{Rtol: 1e-2}}
	fp := d.Fingerprint(policy, nil)
	var files []string
	for i := range 16 {
		p := Partition{Index: i, Count: 16}
		v, err := d.CompareValues(context.Background(), ValueOptions{Policy: policy, Partition: p})
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, "part-"+strconv.Itoa(i)+".json"))
		if err != nil {
			b.Fatal(err)
		}
		if err := NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: v, Partition: p, Fingerprint: fp}).WriteJSON(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		files = append(files, f.Name())
	}
	cpu := cpuTime(syscall.RUSAGE_SELF)
	n := 0
	for b.Loop() {
		n++
		var parts []MergeInput
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			r, err := ReadReport(bufio.NewReader(f))
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			parts = append(parts, MergeInput{Name: name, Report: r})
		}
		m, err := Merge(parts, Error)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Values.Tensors) != 18867 || m.Summary.Warning != 18867 {
			b.Fatalf("%d tensors, %d warnings", len(m.Values.Tensors), m.Summary.Warning)
		}
	}
	// CPU time is what a loaded machine does not inflate.
	b.ReportMetric(float64(cpuTime(syscall.RUSAGE_SELF)-cpu)/float64(n)/1e6, "cpu-ms/op")
}
