package crosscheck

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ckptcheck/ckptcheck/internal/miniyaml"
)

// FuzzMiniYAML holds internal/miniyaml to go.yaml.in/yaml/v3: whatever
// miniyaml accepts, yaml/v3 reads as the same tree (kinds, scalar values,
// nulls, lines). miniyaml may refuse what yaml/v3 accepts (its subset).
func FuzzMiniYAML(f *testing.F) {
	for _, s := range miniYAMLSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkMiniYAML(t, b)
	})
}

func TestMiniYAMLSeeds(t *testing.T) {
	for _, s := range miniYAMLSeeds {
		checkMiniYAML(t, []byte(s))
	}
}

func checkMiniYAML(t *testing.T, b []byte) {
	t.Helper()
	ours, err := miniyaml.Parse(b)
	if err != nil {
		return
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	var doc yaml.Node
	theirErr := dec.Decode(&doc)
	if ours == nil {
		if theirErr == nil && !(len(doc.Content) == 1 && doc.Content[0].Tag == "!!null") {
			t.Fatalf("%q: miniyaml: empty; yaml/v3: %s", b, dump(&doc))
		}
		return
	}
	if theirErr != nil {
		t.Fatalf("%q: miniyaml accepts (%s), yaml/v3: %v", b, dumpOurs(ours), theirErr)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		t.Fatalf("%q: yaml/v3 reads a second document", b)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if got, want := dumpOurs(ours), dump(root); got != want {
		t.Fatalf("%q:\nminiyaml %s\nyaml/v3  %s", b, got, want)
	}
}

func dumpOurs(n *miniyaml.Node) string {
	switch n.Kind {
	case miniyaml.Scalar:
		return scalarDump(n.Value, n.Null, n.Line)
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, dumpOurs(c))
	}
	return fmt.Sprintf("%s@%d[%s]", n.Kind, n.Line, strings.Join(parts, " "))
}

func dump(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return scalarDump(n.Value, n.Tag == "!!null", n.Line)
	case yaml.MappingNode, yaml.SequenceNode:
		kind := map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "sequence"}[n.Kind]
		var parts []string
		for _, c := range n.Content {
			parts = append(parts, dump(c))
		}
		return fmt.Sprintf("%s@%d[%s]", kind, n.Line, strings.Join(parts, " "))
	}
	return fmt.Sprintf("kind %d", n.Kind)
}

var miniYAMLSeeds = []string{
	"",
	"# only a comment\n",
	"---\n",
	"a: b\n",
	"flags:\n  fail-on: warning\ndiff:\n  adapter: [exported=torchtitan-hf, published=hf]\n  values: true\n  atol: 1e-3\nvalidate:\n  --hashes: yes\n",
	"baseline:\n  - code: dtype_mismatch\n    key: \"model.layers.*\"\n    reason: torchtitan exports F32\n  - code: missing_file\n    reason: |\n      transformers v5 does not write it\n",
	"baseline:\n- code: x\n  reason: >-\n    folded\n    text\n\n    para\n",
	"k: |+\n  keep\n\n\nz: 1\n",
	"k: >\n  a\n   spaced\n  b\n\n  c\n",
	"k: 'it''s\n  folded\n\n  twice'\n",
	"k: \"esc \\t \\u00e9 \\x41 \\\n   joined\"\n",
	"k: plain\n  continued\n\n  more\n",
	"- a\n- - b\n  - c\n- d: e\n  f: g\n-\n- ~\n",
	"{a: 1, b: [x, 'y', \"z\"], c}\n",
	"[a, b,\n  c, # comment\n]\n",
	"key  : value # c\n",
	"a: null\nb: Null\nc: 'null'\nd:\n",
	"\"q\": 1\n'r': 2\n",
	"a:\n  b:\n    c: [1, {d: e}]\n",
	"- |\n  lit\n- >\n  fold\n",
	"...\n",
	"a: b\n...\n",
	"--- # c\na: b\n",
	"x: -1\ny: -a\nz: :a\n",
}

// scalarDump writes a scalar for comparison. An empty null (a key or an
// item with no value) has no line of its own: yaml/v3 gives it the next
// token's, miniyaml its key's.
func scalarDump(v string, null bool, line int) string {
	if null && v == "" {
		return "~"
	}
	return fmt.Sprintf("%q%s@%d", v, map[bool]string{true: "~"}[null], line)
}
