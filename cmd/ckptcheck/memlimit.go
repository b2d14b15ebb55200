package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultMemoryLimit is the heap at which the collector starts to run: the
// heap is headers and bounded buffers, tens of MB even for large MoE
// checkpoints, and a collection cycle costs as much as a tenth of a
// header-only diff.
const defaultMemoryLimit = 1 << 30

// setMemoryLimit turns the collector off below a soft memory limit, unless
// the user set GOGC or GOMEMLIMIT (the runtime honours those itself). In a
// container the limit stays below the cgroup's memory.max, so that the
// collector works harder instead of the process being killed.
func setMemoryLimit(getenv func(string) string, cgroupRoot string) (limit int64, set bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	limit = defaultMemoryLimit
	if max, ok := cgroupMemoryMax(cgroupRoot); ok {
		limit = min(limit, max/4*3)
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	return limit, true
}

// cgroupMemoryMax reads the memory limit of this process's cgroup: v2's
// memory.max, or v1's memory.limit_in_bytes. "max" and absurdly large
// values mean no limit.
func cgroupMemoryMax(root string) (int64, bool) {
	for _, p := range []string{filepath.Join(root, cgroupPath(root), "memory.max"), filepath.Join(root, "memory.max"),
		filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// cgroupPath is this process's cgroup v2 path, from /proc/self/cgroup
// ("0::/user.slice/..."), relative to the root; "" when unknown.
func cgroupPath(root string) string {
	if root != "/sys/fs/cgroup" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && filepath.IsLocal(strings.TrimPrefix(p, "/")) {
			return strings.TrimPrefix(p, "/")
		}
	}
	return ""
}
