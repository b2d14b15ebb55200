package cpufeature

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestX86: the extensions imply what they need (FMA and F16C are used only
// with AVX2), the answer is the same every call, and on Linux it agrees
// with the kernel's flags in /proc/cpuinfo (which lists avx2, fma, f16c
// and avx512f only where it saves their registers).
func TestX86(t *testing.T) {
	s := X86()
	if (s.FMA || s.F16C) && !s.AVX2 {
		t.Errorf("%+v: FMA or F16C without AVX2", s)
	}
	if X86() != s {
		t.Errorf("X86 changed between calls")
	}
	if runtime.GOARCH != "amd64" || purego {
		if s != (Set{}) {
			t.Errorf("%s (purego %v): %+v, want none", runtime.GOARCH, purego, s)
		}
		return
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	var flags map[string]bool
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	if flags == nil {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	want := Set{AVX2: flags["avx2"], FMA: flags["avx2"] && flags["fma"], F16C: flags["avx2"] && flags["f16c"], AVX512F: flags["avx512f"]}
	if s != want {
		t.Errorf("X86 = %+v, /proc/cpuinfo says %+v", s, want)
	}
}
