package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	cgroup := func(files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		return dir
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name   string
		getenv func(string) string
		root   string
		limit  int64
		set    bool
	}{
		{"no cgroup", env(), cgroup(nil), 1 << 30, true},
		{"no cgroup limit", env(), cgroup(map[string]string{"memory.max": "max\n"}), 1 << 30, true},
		{"512 MiB container (v2)", env(), cgroup(map[string]string{"memory.max": "536870912\n"}), 384 << 20, true},
		{"512 MiB container (v1)", env(), cgroup(map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}), 384 << 20, true},
		{"v1 without a limit", env(), cgroup(map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}), 1 << 30, true},
		{"a large container", env(), cgroup(map[string]string{"memory.max": "68719476736\n"}), 1 << 30, true},
		{"GOGC set", env("GOGC", "50"), cgroup(map[string]string{"memory.max": "536870912\n"}), 0, false},
		{"GOMEMLIMIT set", env("GOMEMLIMIT", "2GiB"), cgroup(nil), 0, false},
	}
	for _, tt := range tests {
		limit, set := setMemoryLimit(tt.getenv, tt.root)
		if limit != tt.limit || set != tt.set {
			t.Errorf("%s: limit %d set %v; want %d %v", tt.name, limit, set, tt.limit, tt.set)
		}
		if set && debug.SetMemoryLimit(-1) != tt.limit {
			t.Errorf("%s: the runtime's limit is not %d", tt.name, tt.limit)
		}
	}
}
