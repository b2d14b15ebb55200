package main

import (
	"archive/zip"
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// verifyWheel checks a wheel as an installer would, and more: every file
// RECORD lists has its digest and size, RECORD lists every file, the
// binary is a script with mode 0755, and it is an executable of the
// platform the file name's tag says (ELF, Mach-O or PE, of that
// architecture).
func verifyWheel(path string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	name := filepath.Base(path)
	p, version, err := parseWheelName(name)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	modes := map[string]uint32{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, f.Name, err)
		}
		files[f.Name], modes[f.Name] = b, f.ExternalAttrs>>16
	}
	distInfo := "ckptcheck-" + version + ".dist-info/"
	rec, ok := files[distInfo+"RECORD"]
	if !ok {
		return fmt.Errorf("%s: no %sRECORD", name, distInfo)
	}
	rows, err := csv.NewReader(bytes.NewReader(rec)).ReadAll()
	if err != nil {
		return fmt.Errorf("%s: RECORD: %w", name, err)
	}
	listed := map[string]bool{}
	for _, r := range rows {
		if len(r) != 3 {
			return fmt.Errorf("%s: RECORD line %q: want path,hash,size", name, strings.Join(r, ","))
		}
		listed[r[0]] = true
		if r[0] == distInfo+"RECORD" {
			continue
		}
		b, ok := files[r[0]]
		if !ok {
			return fmt.Errorf("%s: RECORD lists %s, which the wheel lacks", name, r[0])
		}
		if r[1] != digest(b) || r[2] != strconv.Itoa(len(b)) {
			return fmt.Errorf("%s: %s: RECORD says %s %s, the file is %s %d", name, r[0], r[1], r[2], digest(b), len(b))
		}
	}
	for f := range files {
		if !listed[f] {
			return fmt.Errorf("%s: %s is not in RECORD", name, f)
		}
	}
	for _, want := range []string{"ckptcheck/__init__.py", "ckptcheck/__main__.py", distInfo + "METADATA", distInfo + "WHEEL"} {
		if _, ok := files[want]; !ok {
			return fmt.Errorf("%s: no %s", name, want)
		}
	}
	if md := string(files[distInfo+"METADATA"]); !strings.Contains(md, "\nName: ckptcheck\n") || !strings.Contains(md, "\nVersion: "+version+"\n") {
		return fmt.Errorf("%s: METADATA does not name ckptcheck %s", name, version)
	}
	for _, tag := range p.tags() {
		if !strings.Contains(string(files[distInfo+"WHEEL"]), "\nTag: "+tag+"\n") {
			return fmt.Errorf("%s: WHEEL lacks Tag: %s", name, tag)
		}
	}
	script := "ckptcheck-" + version + ".data/scripts/ckptcheck" + p.exe()
	bin, ok := files[script]
	if !ok {
		return fmt.Errorf("%s: no %s", name, script)
	}
	if modes[script]&0o777 != 0o755 {
		return fmt.Errorf("%s: %s has mode %o, want 755", name, script, modes[script]&0o777)
	}
	if err := checkExecutable(bin, p); err != nil {
		return fmt.Errorf("%s: %s: %w", name, script, err)
	}
	return nil
}

// parseWheelName reads the platform and version from a wheel's file name.
func parseWheelName(name string) (platform, string, error) {
	for _, p := range platforms {
		if rest, ok := strings.CutSuffix(name, "-py3-none-"+p.tag+".whl"); ok {
			if v, ok := strings.CutPrefix(rest, "ckptcheck-"); ok {
				return p, v, nil
			}
		}
	}
	return platform{}, "", fmt.Errorf("%s: not a ckptcheck wheel name of a known platform", name)
}

// checkExecutable checks that b is an executable for p.
func checkExecutable(b []byte, p platform) error {
	r := bytes.NewReader(b)
	var got string
	switch p.goos {
	case "linux":
		f, err := elf.NewFile(r)
		if err != nil {
			return fmt.Errorf("not ELF: %w", err)
		}
		got = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		if f.Type != elf.ET_EXEC {
			return fmt.Errorf("ELF type %v, want a static executable", f.Type)
		}
	case "darwin":
		f, err := macho.NewFile(r)
		if err != nil {
			return fmt.Errorf("not Mach-O: %w", err)
		}
		got = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	case "windows":
		f, err := pe.NewFile(r)
		if err != nil {
			return fmt.Errorf("not PE: %w", err)
		}
		got = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
	}
	if got != p.goarch {
		return fmt.Errorf("an executable for %q, want %s/%s", got, p.goos, p.goarch)
	}
	return nil
}
