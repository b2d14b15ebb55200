package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// zipTime is every entry's time: the zip format's earliest, so the bytes
// do not depend on when or where the wheel is built.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// entry is one file of a wheel.
type entry struct {
	name string
	data []byte
	mode fs.FileMode
}

// meta is what METADATA says beside the name and version.
type meta struct {
	summary, license, requiresPython, description string
}

// buildWheel writes the wheel for one platform into out and returns its
// path: the package files, the binary as a script, and the dist-info.
func buildWheel(out string, p platform, version string, binary []byte, pkg []entry, m meta) (string, error) {
	distInfo := "ckptcheck-" + version + ".dist-info"
	entries := slices.Clone(pkg)
	entries = append(entries,
		entry{"ckptcheck-" + version + ".data/scripts/ckptcheck" + p.exe(), binary, 0o755},
		entry{distInfo + "/METADATA", metadata(version, m), 0o644},
		entry{distInfo + "/WHEEL", wheelFile(p), 0o644},
	)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	// RECORD lists every other file and comes last, as installers expect.
	entries = append(entries, entry{distInfo + "/RECORD", record(entries, distInfo+"/RECORD"), 0o644})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: zipTime}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(e.data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	dst := filepath.Join(out, p.wheelName(version))
	return dst, os.WriteFile(dst, buf.Bytes(), 0o644)
}

// metadata is the core metadata, version 2.1: the description is the body.
func metadata(version string, m meta) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Metadata-Version: 2.1\nName: ckptcheck\nVersion: %s\n", version)
	fmt.Fprintf(&b, "Summary: %s\n", m.summary)
	b.WriteString("Home-page: https://github.com/ckptcheck/ckptcheck\n")
	b.WriteString("Project-URL: Source, https://github.com/ckptcheck/ckptcheck\n")
	fmt.Fprintf(&b, "License: %s\n", m.license)
	fmt.Fprintf(&b, "Requires-Python: %s\n", m.requiresPython)
	b.WriteString("Classifier: Programming Language :: Python :: 3\n")
	b.WriteString("Classifier: Topic :: Scientific/Engineering :: Artificial Intelligence\n")
	b.WriteString("Description-Content-Type: text/markdown\n\n")
	b.WriteString(m.description)
	return []byte(b.String())
}

// wheelFile is the WHEEL file: not purelib, since it holds a binary.
func wheelFile(p platform) []byte {
	var b strings.Builder
	b.WriteString("Wheel-Version: 1.0\nGenerator: ckptcheck tools/wheel\nRoot-Is-Purelib: false\n")
	for _, t := range p.tags() {
		fmt.Fprintf(&b, "Tag: %s\n", t)
	}
	return []byte(b.String())
}

// record is the RECORD file: each entry's path, sha256 and size, and a
// line for itself without either.
func record(entries []entry, self string) []byte {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s,%s,%d\n", e.name, digest(e.data), len(e.data))
	}
	fmt.Fprintf(&b, "%s,,\n", self)
	return []byte(b.String())
}

// digest is a RECORD hash: sha256=, URL-safe base64 without padding.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// readPackage reads the Python package under dir (python/ckptcheck) as
// wheel entries named ckptcheck/...; caches and compiled files are left out.
func readPackage(dir string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".pyc") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, entry{path.Join("ckptcheck", filepath.ToSlash(rel)), b, 0o644})
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no Python package files", dir)
	}
	return out, err
}

// readmeExcerpt is the README's opening, up to its first section: what the
// package index shows.
func readmeExcerpt(readme []byte) string {
	s := string(readme)
	if i := strings.Index(s, "\n## "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s) + "\n\nInstall: `pip install ckptcheck` (or `uv tool install ckptcheck`, `pipx install ckptcheck`); " +
		"the wheel carries the static `ckptcheck` binary and a small Python API (`import ckptcheck`). " +
		"Documentation: https://github.com/ckptcheck/ckptcheck\n"
}
