package miniyaml

import (
	"strings"
	"testing"
)

// The trees of accepted documents are checked against go.yaml.in/yaml/v3
// in tools/crosscheck (FuzzMiniYAML, TestMiniYAMLRandom); these tests pin
// the refusals and their lines.

func TestParse(t *testing.T) {
	n, err := Parse([]byte("flags:\n  fail-on: warning\nbaseline:\n  - code: x\n    reason: |\n      two\n      lines\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.Kind != Mapping || len(n.Content) != 4 || n.Content[0].Value != "flags" {
		t.Fatalf("%+v", n)
	}
	entry := n.Content[3].Content[0]
	if entry.Kind != Mapping || entry.Line != 4 || entry.Content[3].Value != "two\nlines\n" || !entry.Content[3].Quoted {
		t.Errorf("baseline entry %+v", entry)
	}
	for _, empty := range []string{"", "# c\n", "---\n", "--- # c\n...\n", "\ufeff"} {
		if n, err := Parse([]byte(empty)); n != nil || err != nil {
			t.Errorf("%q: %v, %v", empty, n, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a: &x 1\n", "line 1: anchors (&) are not supported"},
		{"a: 1\nb: *x\n", "line 2: aliases (*) are not supported"},
		{"a: !!str 1\n", "line 1: tags (!) are not supported"},
		{"? a\n: b\n", "line 1: explicit keys (?) are not supported"},
		{"%YAML 1.2\n---\na: b\n", "line 1: directives"},
		{"a: b\n---\nc: d\n", "line 2: more than one YAML document"},
		{"a: |2\n   x\n", "line 1: block scalars with an indentation digit are not supported"},
		{"a:\n\tb: c\n", "line 2: a tab where YAML wants spaces"},
		{"a: b\n  c: d\n", "line 2: mapping values are not allowed here"},
		{"a: b: c\n", "line 1: mapping values are not allowed here"},
		{"a: [1, 2\n", "line 2: the flow collection opened on line 1 is not closed"},
		{"a: 'open\n", "quoted scalar without its closing quote (opened on line 1)"},
		{"a: \"\\q\"\n", `line 1: unknown escape \q`},
		{"a: [b: c]\n", "key: value pairs inside a flow sequence are not supported"},
		{"[a]: b\n", "complex keys are not supported"},
		{"a:\n  - b\n c: d\n", "line 3:"},
		{"a: 1\n b: 2\n", "line 2:"},
		{"a: \x01\n", "line 1: control character U+0001"},
		{"a: \xff\n", "line 1: invalid UTF-8"},
		{"a: - b\n", "a block sequence cannot start on its key's line"},
		{"a: {b\n  c: d}\n", "over several lines inside [ ] or { }"},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "nested more than 64 levels"},
		{strings.Repeat("- ", 100) + "x\n", "nested more than 64 levels"},
		{strings.Repeat("k", 2000) + ": v\n", "a key longer than 1024 bytes"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParse: any input gets a tree or an error, never a panic or a hang.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a: b\n", "- [a, {b: c}]\n", "k: |-\n  x\n", "'q''s': \"e\\u00e9\"\n", "a:\n- b\n- c: d\n  e: f\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Parse(b)
		if err != nil && n != nil {
			t.Fatal("a tree with an error")
		}
		if e, ok := err.(*Error); err != nil && (!ok || e.Line < 1 || e.Line > strings.Count(string(b), "\n")+strings.Count(string(b), "\r")+1) {
			t.Fatalf("error %v: line out of the input", err)
		}
	})
}
