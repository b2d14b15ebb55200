package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
)

// An Ignore silences a finding code (--ignore CODE[=GLOB]): every finding
// of the code, or only those whose key matches the glob.
type Ignore struct {
	Code Code
	Keys *adapter.Glob // nil: every key
}

// ParseIgnore parses "CODE" or "CODE=GLOB". An unknown code is an error, so
// that a typo does not silently ignore nothing.
func ParseIgnore(spec string) (Ignore, error) {
	code, glob, hasGlob := strings.Cut(spec, "=")
	if _, ok := DocOf(Code(code)); !ok {
		return Ignore{}, fmt.Errorf("--ignore %q: no finding code %q (see ckptcheck codes)", spec, code)
	}
	ig := Ignore{Code: Code(code)}
	if hasGlob {
		if glob == "" {
			return Ignore{}, fmt.Errorf("--ignore %q: empty key pattern", spec)
		}
		ig.Keys = adapter.CompileGlob(glob)
	}
	return ig, nil
}

func (ig Ignore) String() string {
	if ig.Keys == nil {
		return string(ig.Code)
	}
	return string(ig.Code) + "=" + ig.Keys.String()
}

// ApplyIgnores drops the findings the ignores silence and counts them. A
// summary finding (one that lists Keys) loses the keys that match, and is
// dropped when none are left.
func ApplyIgnores(findings []Finding, ignores []Ignore) (kept []Finding, ignored int) {
	if len(ignores) == 0 {
		return findings, 0
	}
	kept = make([]Finding, 0, len(findings))
	for _, f := range findings {
		drop := false
		for _, ig := range ignores {
			if ig.Code != f.Code {
				continue
			}
			if ig.Keys == nil {
				drop = true
				break
			}
			if len(f.Keys) > 0 {
				n := len(f.Keys)
				f.Keys = slices.DeleteFunc(slices.Clone(f.Keys), ig.Keys.Match)
				ignored += n - len(f.Keys)
				drop = len(f.Keys) == 0
				if drop {
					ignored-- // counted below as the finding itself
				}
				continue
			}
			if ig.Keys.Match(f.Key) {
				drop = true
				break
			}
		}
		if drop {
			ignored++
			continue
		}
		kept = append(kept, f)
	}
	return kept, ignored
}
