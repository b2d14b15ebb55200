package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// serve is `benchrun serve [-latency D] [-cdn] DIR`: a file server on
// loopback in its own process, adding latency to every answer; with -cdn
// the .safetensors files redirect to a second server on 127.0.0.2 (as the
// Hub redirects to its CDN), which adds the latency too. It prints its URL,
// answers /__stats with the bytes and requests served (both servers), and
// stops when its standard input closes.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	latency := fs.Duration("latency", 0, "added to every answer")
	cdn := fs.Bool("cdn", false, "redirect .safetensors files to a second server on 127.0.0.2")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: benchrun serve [-latency D] [-cdn] DIR")
	}
	dir := fs.Arg(0)
	origin, err := remotetest.NewServer(dir)
	if err != nil {
		return err
	}
	origin.SetLatency(*latency)
	servers := []*remotetest.Server{origin}
	if *cdn {
		c, err := remotetest.NewServer(dir, "127.0.0.2")
		if err != nil {
			return err
		}
		c.SetLatency(*latency)
		servers = append(servers, c)
	}
	origin.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/__stats":
			var b, n int64
			for _, s := range servers {
				b, n = b+s.BytesNow(), n+s.Requests()
			}
			json.NewEncoder(w).Encode(map[string]int64{"bytes": b, "requests": n - 1})
			return true
		case len(servers) > 1 && strings.HasSuffix(r.URL.Path, ".safetensors"):
			remotetest.Redirect(w, r, servers[1].URL)
			return true
		}
		return false
	})
	fmt.Println(origin.URL)
	io.Copy(io.Discard, os.Stdin)
	for _, s := range servers {
		s.Close()
	}
	return nil
}

// A server is a `benchrun serve` process.
type server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	URL   string
}

func startServer(self, dir string, args ...string) (*server, error) {
	cmd := exec.Command(self, append(append([]string{"serve"}, args...), dir)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("benchrun serve: %v", err)
	}
	return &server{cmd: cmd, stdin: stdin, URL: strings.TrimSpace(line)}, nil
}

func (s *server) stats() (bytes, requests int64) {
	resp, err := http.Get(s.URL + "/__stats")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	var m map[string]int64
	json.NewDecoder(resp.Body).Decode(&m)
	return m["bytes"], m["requests"]
}

func (s *server) stop() {
	if s != nil {
		s.stdin.Close()
		s.cmd.Wait()
	}
}

// headerBytes is what a header-only read of a folder needs: every
// shard's 8-byte length and header, and the other files whole.
func headerBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".safetensors") {
			st, _ := os.Stat(p)
			n += st.Size()
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if _, h, err := readHeaderLen(f); err == nil {
			n += 8 + h
		}
		f.Close()
	}
	return n
}

func readHeaderLen(f *os.File) (int, int64, error) {
	var b [8]byte
	n, err := io.ReadFull(f, b[:])
	var v int64
	for i := 7; i >= 0; i-- {
		v = v<<8 | int64(b[i])
	}
	return n, v, err
}

// remoteScenarios time ckptcheck on checkpoints served over HTTP by a
// server in its own process.
func remoteScenarios(bin, self string) []scenario {
	var srv *server
	var moeNeed, before int64
	all := []scenario{
		{
			id:    "remote-diff-moe",
			title: "structural diff over http:// of a Qwen3-30B-A3B-shaped checkpoint, 16 sparse shards, vs a local copy; 50 ms added to every answer, .safetensors redirected to a second host",
			setup: func(dir string) error {
				for _, d := range []string{"remote", "local"} {
					if err := fixture.WriteSparse(filepath.Join(dir, d), fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
						return err
					}
				}
				moeNeed = headerBytes(filepath.Join(dir, "remote"))
				var err error
				srv, err = startServer(self, filepath.Join(dir, "remote"), "-latency", "50ms", "-cdn")
				if err == nil {
					before, _ = srv.stats()
				}
				return err
			},
			ours: func(dir string) [][]string {
				return [][]string{{bin, "diff", srv.URL + "/model.safetensors.index.json", filepath.Join(dir, "local")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{bin, "diff", filepath.Join(dir, "remote"), filepath.Join(dir, "local")}}
			},
			report: func(runs []int) {
				b, _ := srv.stats()
				per := float64(b-before) / float64(runs[0])
				fmt.Printf("  transferred per remote run: %.0f bytes; index, config and headers hold %d bytes (%.3f×; target ≤ 1.10×)\n",
					per, moeNeed, per/float64(moeNeed))
			},
			teardown: func() { srv.stop() },
		},
		{
			id:    "remote-values",
			title: "diff --values over http:// of Qwen3-0.6B-shaped 1.2 GB BF16 vs an identical local copy; server in its own process, 20 ms added to every answer",
			setup: func(dir string) error {
				if err := os.MkdirAll(filepath.Join(dir, "srv"), 0o755); err != nil {
					return err
				}
				for _, n := range []string{"srv/pub.safetensors", "same.safetensors"} {
					if err := fixture.WriteStream(filepath.Join(dir, n), fixture.Qwen3Dense06B, safetensors.BF16, nil); err != nil {
						return err
					}
				}
				var err error
				srv, err = startServer(self, filepath.Join(dir, "srv"), "-latency", "20ms")
				return err
			},
			ours: func(dir string) [][]string {
				return [][]string{{bin, "diff", "--values", srv.URL + "/pub.safetensors", filepath.Join(dir, "same.safetensors")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{"curl", "-sf", "-o", "/dev/null", srv.URL + "/pub.safetensors"}}
			},
			teardown: func() { srv.stop() },
		},
	}
	if _, err := exec.LookPath("curl"); err != nil {
		fmt.Println("  (remote-values skipped: its baseline needs curl; apt-get install curl)")
		return all[:1]
	}
	return all
}
