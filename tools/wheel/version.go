package main

import (
	"fmt"
	"regexp"
	"strings"
)

// describe matches what git describe --tags --always --dirty prints: a tag
// with the commits since it and the abbreviated commit, or a commit alone
// (a clone without tags), then -dirty for a modified tree.
var (
	afterTag = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]+)$`)
	bareSHA  = regexp.MustCompile(`^[0-9a-f]{4,40}$`)
	release  = regexp.MustCompile(`^v?([0-9]+(?:\.[0-9]+)*)(?:-?(alpha|beta|rc|a|b)\.?([0-9]+))?$`)
)

// pep440 turns the version make dist stamps into the binary (git describe
// --tags --always --dirty) into the PEP 440 form a wheel's name and
// METADATA need: v1.2.3 is 1.2.3, v1.2.3-rc.1 is 1.2.3rc1, five commits
// after v1.2.3 is 1.2.3.post5+g<sha>, a clone without tags is
// 0.0.0.dev<commits>+g<sha>, and a dirty tree adds the local segment dirty.
func pep440(describe string, commits int) (string, error) {
	d, dirty := strings.CutSuffix(describe, "-dirty")
	var public, local string
	switch {
	case bareSHA.MatchString(d):
		public, local = fmt.Sprintf("0.0.0.dev%d", commits), "g"+d
	default:
		tag, post, sha := d, "", ""
		if m := afterTag.FindStringSubmatch(d); m != nil {
			tag, post, sha = m[1], m[2], m[3]
		}
		m := release.FindStringSubmatch(tag)
		if m == nil {
			return "", fmt.Errorf("version %q: the tag %q is not a release version (v1.2.3, v1.2.3-rc.1)", describe, tag)
		}
		public = m[1]
		if m[2] != "" {
			public += map[string]string{"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc"}[m[2]] + m[3]
		}
		if post != "" {
			public += ".post" + post
			local = "g" + sha
		}
	}
	if dirty {
		local = strings.TrimPrefix(local+".dirty", ".")
	}
	if local != "" {
		return public + "+" + local, nil
	}
	return public, nil
}
