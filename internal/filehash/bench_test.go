package filehash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFiles hashes two 64 MiB files (SHA-256 of each, xxh3 of
// 4 MiB ranges) with one worker per file, at several read sizes.
func BenchmarkFiles(b *testing.B) {
	path := b.TempDir()
	const size = 64 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	var jobs []Job
	for i := range 2 {
		buf := make([]byte, size)
		for k := range buf {
			buf[k] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("f%d", i)
		if err := os.WriteFile(filepath.Join(path, name), buf, 0o644); err != nil {
			b.Fatal(err)
		}
		j := Job{Name: name, Size: size, Want: Want{SHA256: true}}
		for off := int64(0); off < size; off += 4 << 20 {
			j.Ranges = append(j.Ranges, Range{off, off + 4<<20})
		}
		jobs = append(jobs, j)
	}
	d := newDir(path)
	for _, chunk := range []int{128 << 10, 512 << 10, 2 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("chunk=%dKiB", chunk>>10), func(b *testing.B) {
			b.SetBytes(2 * size)
			for b.Loop() {
				if _, err := Files(context.Background(), jobs, d.open, Options{Chunk: chunk}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
