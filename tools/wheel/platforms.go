package main

import "strings"

// A platform is a Go target and the wheel platform tag it is installed on.
type platform struct {
	goos, goarch string
	// tag is the wheel's platform tag; a compound tag (a.b) names every
	// platform the one static binary serves.
	tag string
}

// platforms are the six release targets. The linux binaries are static
// (CGO_ENABLED=0), so they serve glibc (manylinux2014 = glibc 2.17) and musl
// alike; Go 1.25+ needs macOS 12.
var platforms = []platform{
	{"linux", "amd64", "manylinux_2_17_x86_64.musllinux_1_1_x86_64"},
	{"linux", "arm64", "manylinux_2_17_aarch64.musllinux_1_1_aarch64"},
	{"darwin", "amd64", "macosx_12_0_x86_64"},
	{"darwin", "arm64", "macosx_12_0_arm64"},
	{"windows", "amd64", "win_amd64"},
	{"windows", "arm64", "win_arm64"},
}

// exe is the executable suffix on the platform.
func (p platform) exe() string {
	if p.goos == "windows" {
		return ".exe"
	}
	return ""
}

// binary is the file make dist writes for the platform.
func (p platform) binary() string { return "ckptcheck-" + p.goos + "-" + p.goarch + p.exe() }

// tags are the WHEEL file's Tag lines: the compound tag expanded.
func (p platform) tags() []string {
	var out []string
	for _, t := range strings.Split(p.tag, ".") {
		out = append(out, "py3-none-"+t)
	}
	return out
}

// wheelName is the file name PEP 427 gives the wheel.
func (p platform) wheelName(version string) string {
	return "ckptcheck-" + strings.ReplaceAll(version, "-", "_") + "-py3-none-" + p.tag + ".whl"
}
