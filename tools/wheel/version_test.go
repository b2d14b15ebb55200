package main

import "testing"

func TestPEP440(t *testing.T) {
	for _, tt := range []struct {
		describe string
		commits  int
		want     string
	}{
		{"v1.2.3", 9, "1.2.3"},
		{"1.2.3", 9, "1.2.3"},
		{"v1.2.3-dirty", 9, "1.2.3+dirty"},
		{"v1.2.3-rc.1", 9, "1.2.3rc1"},
		{"v0.4.0-beta2", 9, "0.4.0b2"},
		{"v1.2.3-5-gabc1234", 9, "1.2.3.post5+gabc1234"},
		{"v1.2.3-5-gabc1234-dirty", 9, "1.2.3.post5+gabc1234.dirty"},
		{"16ef4a3", 212, "0.0.0.dev212+g16ef4a3"},
		{"16ef4a3-dirty", 212, "0.0.0.dev212+g16ef4a3.dirty"},
	} {
		got, err := pep440(tt.describe, tt.commits)
		if err != nil || got != tt.want {
			t.Errorf("pep440(%q, %d) = %q, %v; want %q", tt.describe, tt.commits, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "unknown", "release-one", "v1.2.3-5-gXYZ"} {
		if got, err := pep440(bad, 1); err == nil {
			t.Errorf("pep440(%q) = %q, want an error", bad, got)
		}
	}
}
