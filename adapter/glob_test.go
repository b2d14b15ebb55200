package adapter

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a.b", "a.bc", false},
		{"*", "", true},
		{"*", "model.layers.0.weight", true},
		{"*.bias", "model.layers.0.self_attn.q_proj.bias", true},
		{"*.bias", "model.layers.0.self_attn.q_proj.weight", false},
		{"model.*.weight", "model.layers.0.mlp.weight", true},
		{"model.*.weight", "model.weight", false},
		{"model.*weight", "model.weight", true},
		{"*rotary_emb.inv_freq", "model.layers.3.self_attn.rotary_emb.inv_freq", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b*c", "acb", false},
		{"a*a*a", "aa", false},
		{"a*a*a", "aaa", true},
		{"**", "x", true},
		{"?", "", false},
		{"?", "a", true},
		{"?", "é", true},
		{"?", "ab", false},
		{"layers.?.mlp", "layers.7.mlp", true},
		{"layers.?.mlp", "layers.17.mlp", false},
		{"layers.??.mlp", "layers.17.mlp", true},
		{"*.?", "a.b", true},
		{"*?", "", false},
		{"?*", "x", true},
		{"a?c*", "abcde", true},
		{"*b?d", "abcbxd", true},
		{"*b?d", "abcbd", false},
		{"[a]", "[a]", true},
		{"[a]", "a", false},
		{`a\*`, `a\bc`, true},
		{"{i}", "{i}", true},
		{"ü*ß", "üxyß", true},
	}
	for _, tt := range tests {
		if got := CompileGlob(tt.pattern).Match(tt.name); got != tt.want {
			t.Errorf("CompileGlob(%q).Match(%q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
		if got := matchWild(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchWild(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// globRegexp is the dialect's definition, as a regular expression.
func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func FuzzGlob(f *testing.F) {
	f.Add("*.bias", "model.layers.0.bias")
	f.Add("a*b?c*", "axxbyc")
	f.Add("?é*", "xé.")
	f.Add("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 256 || len(name) > 4096 {
			return
		}
		g := CompileGlob(pattern)
		got := g.Match(name)
		if g.String() != pattern {
			t.Fatalf("String() = %q", g.String())
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return
		}
		if want := globRegexp(pattern).MatchString(name); got != want {
			t.Fatalf("CompileGlob(%q).Match(%q) = %v, the definition says %v", pattern, name, got, want)
		}
		if wild := matchWild(pattern, name); wild != got {
			t.Fatalf("matchWild(%q, %q) = %v, Match says %v", pattern, name, wild, got)
		}
	})
}

func BenchmarkGlob(b *testing.B) {
	name := "model.layers.31.self_attn.rotary_emb.inv_freq"
	for _, p := range []string{"model.layers.31.self_attn.rotary_emb.inv_freq", "*rotary_emb.inv_freq", "model.*.self_attn.*", "model.layers.??.*"} {
		g := CompileGlob(p)
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				g.Match(name)
			}
		})
	}
}
