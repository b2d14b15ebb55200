package main

import (
	"strings"
	"testing"
)

func TestDCPCommands(t *testing.T) {
	const dir = "../../testdata/dcp/"
	if code, out, stderr := ckptcheck(t, "validate", dir+"good"); code != 0 || !strings.Contains(out, "2 tensors") {
		t.Errorf("validate good: exit %d\n%s%s", code, out, stderr)
	}
	for step, code := range map[string]string{"gap": "dcp_chunk_gap", "overlap": "dcp_chunk_overlap"} {
		if exit, out, stderr := ckptcheck(t, "validate", dir+step); exit != 1 || !strings.Contains(out, code) || !strings.Contains(out, "model.w") {
			t.Errorf("validate %s: exit %d\n%s%s", step, exit, out, stderr)
		}
	}
	code, out, stderr := ckptcheck(t, "inspect", dir+"good")
	if code != 0 || !strings.Contains(out, "model.w") || strings.Contains(out, "exp_avg") || !strings.Contains(out, "dcp.optimizer = 1 entry") {
		t.Errorf("inspect good: exit %d\n%s%s", code, out, stderr)
	}
}
