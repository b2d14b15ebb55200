package main

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkRemoteDiffMoE is a structural diff over http:// of a
// Qwen3-30B-A3B-shaped checkpoint (16 sparse shards, 61 GB claimed)
// against a local copy, 50 ms added to every answer, the .safetensors
// files redirected to a second host as the Hub redirects to its CDN
// (the redirect costs its 50 ms too). It reports the bytes served per run
// and their ratio to the index, config and headers (target ≤ 1.10).
func BenchmarkRemoteDiffMoE(b *testing.B) {
	root := b.TempDir()
	remote, local := filepath.Join(root, "remote"), filepath.Join(root, "local")
	for _, d := range []string{remote, local} {
		if err := fixture.WriteSparse(d, fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
			b.Fatal(err)
		}
	}
	need := int64(0)
	entries, _ := os.ReadDir(remote)
	for _, e := range entries {
		p := filepath.Join(remote, e.Name())
		if strings.HasSuffix(e.Name(), ".safetensors") {
			f, _ := os.Open(p)
			var n [8]byte
			io.ReadFull(f, n[:])
			f.Close()
			need += 8 + int64(binary.LittleEndian.Uint64(n[:]))
		} else {
			st, _ := os.Stat(p)
			need += st.Size()
		}
	}
	origin, err := remotetest.NewServer(remote)
	if err != nil {
		b.Fatal(err)
	}
	defer origin.Close()
	cdn, err := remotetest.NewServer(remote, "127.0.0.2")
	if err != nil {
		b.Skip("no 127.0.0.2:", err)
	}
	defer cdn.Close()
	origin.SetLatency(50 * time.Millisecond)
	cdn.SetLatency(50 * time.Millisecond)
	origin.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, ".safetensors") {
			remotetest.Redirect(w, r, cdn.URL)
			return true
		}
		return false
	})
	b.ResetTimer()
	for b.Loop() {
		if code := run(context.Background(), []string{"ckptcheck", "diff", origin.URL + "/model.safetensors.index.json", local}, io.Discard, os.Stderr); code != 0 {
			b.Fatal(code)
		}
	}
	served := float64(origin.Bytes()+cdn.Bytes()) / float64(b.N)
	b.ReportMetric(served, "bytes-served/op")
	b.ReportMetric(served/float64(need), "served/needed")
}
