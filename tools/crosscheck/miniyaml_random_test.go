package crosscheck

import (
	"math/rand"
	"testing"
)

// TestMiniYAMLRandom holds miniyaml to yaml/v3 on generated documents
// (the fuzz target's check, deterministic): half random bytes of YAML's
// indicators, half sequences of YAML's tokens, so that block structure,
// flow collections and scalars of every style meet.
func TestMiniYAMLRandom(t *testing.T) {
	alpha := []byte("ab0:- \n\t#[]{},'\"|>+?.\\&*!~\r")
	toks := []string{"a", "b: ", "- ", "  ", "    ", "\n", "\n  ", "\n    ", "\n- ", "[", "]", "{", "}", ", ", "'x y'",
		"\"q\\n\"", "|", ">-", "|+", "# c", "~", "null", ": ", "k:", "\n\n", " ", "\t", "-1", "'", "\"", "?", "x:y", "---", "..."}
	r := rand.New(rand.NewSource(1))
	n := 60000
	if testing.Short() {
		n = 5000
	}
	for it := 0; it < n; it++ {
		var b []byte
		if it%2 == 0 {
			b = make([]byte, r.Intn(60))
			for i := range b {
				b[i] = alpha[r.Intn(len(alpha))]
			}
		} else {
			for k := r.Intn(20); k > 0; k-- {
				b = append(b, toks[r.Intn(len(toks))]...)
			}
		}
		checkMiniYAML(t, b)
	}
}
