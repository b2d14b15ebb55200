package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dist := flag.String("dist", "dist", "the directory make dist wrote the binaries to")
	out := flag.String("out", "dist/wheels", "where to write the wheels")
	pyDir := flag.String("python", "python/ckptcheck", "the Python package's directory")
	readme := flag.String("readme", "README.md", "the README, whose opening is the description")
	describe := flag.String("version", "", "the version stamped into the binaries (git describe --tags --always --dirty)")
	commits := flag.Int("commits", 0, "the commit count (git rev-list --count HEAD): a clone without tags is 0.0.0.devN")
	only := flag.String("platforms", "", "GOOS/GOARCH pairs, separated by spaces or commas (default: all six)")
	license := flag.String("license", "UNKNOWN", "the License field of METADATA")
	verify := flag.Bool("verify", false, "check the wheels named as arguments instead: RECORD, the binary's format and architecture")
	flag.Parse()
	if *verify {
		for _, w := range flag.Args() {
			if err := verifyWheel(w); err != nil {
				fmt.Fprintln(os.Stderr, "wheel:", err)
				os.Exit(1)
			}
			fmt.Println("ok", w)
		}
		return
	}
	if err := run(*dist, *out, *pyDir, *readme, *describe, *commits, *only, *license); err != nil {
		fmt.Fprintln(os.Stderr, "wheel:", err)
		os.Exit(1)
	}
}

func run(dist, out, pyDir, readmePath, describe string, commits int, only, license string) error {
	version, err := pep440(describe, commits)
	if err != nil {
		return err
	}
	pkg, err := readPackage(pyDir)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	m := meta{
		summary:        "Verify Hugging Face safetensors checkpoints before you upload or serve them",
		license:        license,
		requiresPython: ">=3.8",
		description:    readmeExcerpt(readme),
	}
	want, err := selectPlatforms(only)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, p := range want {
		bin, err := os.ReadFile(filepath.Join(dist, p.binary()))
		if err != nil {
			return fmt.Errorf("%w (run make dist first: make wheel zips its binaries)", err)
		}
		w, err := buildWheel(out, p, version, bin, pkg, m)
		if err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
		fmt.Println(w)
	}
	return nil
}

// selectPlatforms picks the named GOOS/GOARCH pairs, or all six.
func selectPlatforms(only string) ([]platform, error) {
	names := strings.FieldsFunc(only, func(r rune) bool { return r == ' ' || r == ',' })
	if len(names) == 0 {
		return platforms, nil
	}
	var out []platform
	for _, n := range names {
		found := false
		for _, p := range platforms {
			if p.goos+"/"+p.goarch == n {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no wheel platform for %s", n)
		}
	}
	return out, nil
}
