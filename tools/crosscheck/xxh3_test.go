package crosscheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	ours "github.com/ckptcheck/ckptcheck/internal/xxh3"
	"github.com/ckptcheck/ckptcheck/manifest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// randomBytes is n bytes of a seeded generator.
func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 21))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestXXH3Zeebo holds internal/xxh3 against zeebo/xxh3 (the hash the
// manifests were made with) at every length up to three blocks, then at
// lengths around stripes, blocks and 1 MiB, one-shot and streamed.
func TestXXH3Zeebo(t *testing.T) {
	input := randomBytes(1, 3<<20)
	lengths := make([]int, 0, 4000)
	for n := 0; n <= 3*1024+64; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range []int{4096, 16 << 10, 64 << 10, 1 << 20, 3 << 20} {
		for _, d := range []int{-65, -64, -63, -1, 0} {
			lengths = append(lengths, n+d)
		}
	}
	for _, n := range lengths {
		p := input[:n]
		want := xxh3.Hash(p)
		if got := ours.Hash(p); got != want {
			t.Fatalf("Hash(%d bytes) = %#016x, zeebo %#016x", n, got, want)
		}
		h := ours.New()
		for q, piece := p, 1+n%300; len(q) > 0; {
			k := min(piece, len(q))
			h.Write(q[:k])
			q = q[k:]
		}
		if got := h.Sum64(); got != want {
			t.Fatalf("Hasher(%d bytes in pieces of %d) = %#016x, zeebo %#016x", n, 1+n%300, got, want)
		}
	}
}

// TestManifestXXH3Zeebo builds a manifest of a 3-shard model, as
// `ckptcheck manifest` does, and holds every tensor's xxh3 against
// zeebo/xxh3, the hash earlier releases wrote manifests with.
func TestManifestXXH3Zeebo(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	dir := filepath.Join(t.TempDir(), "m")
	if err := fixture.WriteModel(dir, tensors, 3, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := checkpoint.Open(ctx, dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	files, err := manifest.Work(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Build(ctx, c, files, manifest.Options{Tool: "crosscheck"})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{}
	for _, ts := range tensors {
		data[ts.Name] = ts.Data
	}
	if len(m.Tensors) != len(tensors) {
		t.Fatalf("%d tensors in the manifest, want %d", len(m.Tensors), len(tensors))
	}
	for _, mt := range m.Tensors {
		if want := fmt.Sprintf("%016x", xxh3.Hash(data[mt.Name])); mt.XXH3 != want {
			t.Errorf("%s: xxh3 %s, zeebo %s", mt.Name, mt.XXH3, want)
		}
	}
}

// FuzzXXH3Zeebo compares both of ours, one-shot and streamed in pieces the
// fuzzer picks, with zeebo's one-shot and streaming hashes.
func FuzzXXH3Zeebo(f *testing.F) {
	f.Add(randomBytes(2, 0), []byte{})
	f.Add(randomBytes(3, 241), []byte{15, 1})
	f.Add(randomBytes(4, 5000), []byte{64, 3, 255, 0, 16})
	f.Fuzz(func(t *testing.T, data, splits []byte) {
		want := xxh3.Hash(data)
		if got := ours.Hash(data); got != want {
			t.Fatalf("Hash(%d bytes) = %#016x, zeebo %#016x", len(data), got, want)
		}
		h, z := ours.New(), xxh3.New()
		p := data
		for _, s := range splits {
			k := min(int(s)*16+int(s)%7, len(p))
			h.Write(p[:k])
			z.Write(p[:k])
			p = p[k:]
		}
		h.Write(p)
		z.Write(p)
		if got, zs := h.Sum64(), z.Sum64(); got != want || zs != want {
			t.Fatalf("%d bytes split by %v: Hasher %#016x, zeebo's Hasher %#016x, Hash %#016x", len(data), splits, got, zs, want)
		}
	})
}

// BenchmarkXXH3 is internal/xxh3 against zeebo/xxh3 on the same inputs:
// the manifests hash tensors of megabytes.
func BenchmarkXXH3(b *testing.B) {
	for _, n := range []int{4 << 10, 256 << 10, 1 << 20, 16 << 20} {
		input := randomBytes(5, n)
		for _, impl := range []struct {
			name string
			hash func([]byte) uint64
		}{{"ours", ours.Hash}, {"zeebo", xxh3.Hash}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, impl.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					impl.hash(input)
				}
			})
		}
	}
}
