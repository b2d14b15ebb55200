package adapter

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"doc no name", "no name line"},
		{"name x\nname y", "a second name line"},
		{"name x\nauto sometimes", "auto takes one of never, wrapper, structural"},
		{"name x\nauto wrapper\nauto never", "a second auto line"},
		{"name x\norder first", "order takes an integer"},
		{"name x\nfrobnicate a b", `unknown rule "frobnicate"`},
		{"name x\nrename a", "takes 2 arguments, not 1"},
		{"name x\nrename a b c", "takes 2 arguments, not 3"},
		{"name x\nrename a.{i} b.{j}", "uses {j}, which the pattern does not capture"},
		{"name x\nrename a.{i}.{i} b.{i}", "captures {i} twice"},
		{"name x\nrename layers.{i}.* b.{i}", "a glob cannot capture {i}"},
		{"name x\npermute a b", "needs heads="},
		{"name x\npermute a b heads=2 heads=2", "heads= given twice"},
		{"name x\nsplit a b c sizes=1", "1 sizes for 2 outputs"},
		{"name x\nsplit a b c dim=-1", "want a dimension number"},
		{"name x\nsplit a b c groups=2*", "ends early"},
		{"name x\nsplit a b c groups=2**3", "unexpected *"},
		{"name x\nsplit a b c groups=(2)", "unexpected"},
		{"name x\nsplit a b c heads=2", "takes no heads= option"},
		{"name x\nsplit a b c sizes=99999999999999999999,1", "not an int64"},
		{"name x\nunstack a.{e} b.{e}", "unstack binds to the slice"},
		{"name x\nregex ( y", "missing closing )"},
		{"name x\ndrop a", "takes 2 or more arguments, not 1"},
		{"name x\ndrop a # a comment is no reason", "takes 2 or more arguments, not 1"},
		{"name x\nconcat a b", "two or more sources"},
		{"name x\nconcat a+a ab", "given twice"},
		{"name x\nconcat a.{i}+b c", "capture different names"},
		{"name x\nconcat a.*+b c", "cannot be a glob"},
		{"name x\nignore", "takes 1 arguments, not 0"},
		{"name x\nstrip-prefix a b", "takes 1 arguments, not 2"},
		{"name x\nrename a b\n\xff", "not UTF-8"},
		{"name x\nabsent model.vision_tower.*", "takes a glob of the other side's names and the reason"},
		{"name x\nabsent a.{n}x.* why", "neither literal nor an expression in braces"},
		{"name x\nabsent a.{n+}.* why", "ends early"},
	}
	for _, tt := range tests {
		_, err := Parse("test", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

// only returns an adapter's one rule, or an empty one when it has not
// exactly one: a check on it then fails instead of panicking.
func only(a *Adapter) *rule {
	if len(a.rules) != 1 {
		return &rule{}
	}
	return a.rules[0]
}

// dst0 is the text of a rule's first destination, or "".
func dst0(r *rule) string {
	if len(r.dst) == 0 {
		return ""
	}
	return r.dst[0].text
}

// TestParseWords: how lines split into words, comments and options.
func TestParseWords(t *testing.T) {
	tests := []struct {
		name, src string
		check     func(a *Adapter) bool
	}{
		{"directives", "# comment\nname x # trailing\ndoc one\ndoc two\nfamily llama mistral\nrename a b",
			func(a *Adapter) bool {
				return a.Name == "x" && a.Doc == "one two" && slices.Equal(a.Families, []string{"llama", "mistral"}) && len(a.rules) == 1
			}},
		{"tabs", "name\tx\ndoc\ttabbed\t\ttext\nrename\ta\t\tb\t# note\nauto\twrapper\norder\t-3",
			func(a *Adapter) bool {
				return a.Name == "x" && a.Doc == "tabbed text" && a.Auto == AutoWrapper && a.Order == -3 &&
					dst0(only(a)) == "b" && only(a).text == "rename a b"
			}},
		{"crlf", "name x\r\nrename a b\r\n", func(a *Adapter) bool { return a.Name == "x" && dst0(only(a)) == "b" }},
		{"comment without a space", "#comment\nname x #trailing", func(a *Adapter) bool { return a.Name == "x" }},
		{"# inside a regex", "name x\nregex ^a#b$ c#d", func(a *Adapter) bool {
			r := only(a)
			return r.re != nil && r.re.String() == "^a#b$" && r.repl == "c#d"
		}},
		{"# words in doc text", "name x\ndoc see #12 and #13 # not this\ndoc #14", func(a *Adapter) bool {
			return a.Doc == "see #12 and #13 #14"
		}},
		{"# words in a drop reason", "name x\ndrop a see #12 # note", func(a *Adapter) bool { return only(a).reason == "see #12" }},
		{"= in a regex replacement", "name x\nregex ^(a)=(b)$ $2=$1", func(a *Adapter) bool { return only(a).repl == "$2=$1" }},
		{"= in a template", "name x\nrename a b=c", func(a *Adapter) bool { return dst0(only(a)) == "b=c" }},
		{"= in a split output", "name x\nsplit a k=1 v=2 dim=1", func(a *Adapter) bool {
			r := only(a)
			return len(r.dst) == 2 && dst0(r) == "k=1" && r.dim == 1
		}},
		{"options in any order", "name x\nsplit a q k v sizes=2,1,1 groups=num_key_value_heads dim=1", func(a *Adapter) bool {
			r := only(a)
			return len(r.dst) == 3 && len(r.sizes) == 3 && r.groups != nil && r.groups.text == "num_key_value_heads" && r.dim == 1
		}},
		{"auto by default", "name x", func(a *Adapter) bool { return a.Auto == AutoStructural && a.Order == 0 }},
		{"rule text", "name x\nrename   a    b   # note", func(a *Adapter) bool { return only(a).where == "x:2: rename a b" }},
		{"glob patterns", "name x\nignore *rotary?emb*", func(a *Adapter) bool {
			r := only(a)
			return len(r.src) == 1 && r.src[0].glob != nil && r.src[0].glob.Match("model.rotary_emb.inv_freq")
		}},
	}
	for _, tt := range tests {
		a, err := Parse("test", tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !tt.check(a) {
			t.Errorf("%s: parsed %+v, rules %+v", tt.name, a, a.rules)
		}
	}
}

// TestRuleSpecs keeps the table whole: every rule kind has a spec, and
// every option a spec names has a parser.
func TestRuleSpecs(t *testing.T) {
	kinds := map[opKind]bool{}
	for word, spec := range ruleSpecs() {
		kinds[spec.kind] = true
		if spec.build == nil || spec.min < 1 || (spec.max >= 0 && spec.max < spec.min) {
			t.Errorf("%s: spec %+v", word, spec)
		}
		for _, o := range append(slices.Clone(spec.options), spec.required...) {
			if optionSpecs[o] == nil || !slices.Contains(spec.options, o) {
				t.Errorf("%s: option %s has no parser or is required but not taken", word, o)
			}
		}
	}
	for k := opStripPrefix; k <= opFlatten; k++ {
		if !kinds[k] {
			t.Errorf("rule kind %d has no spec", k)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, a := range Presets() {
		f.Add(a.Source)
	}
	f.Add("name x\nconcat a.{i}+b.{i} c.{i} dim=1\nsplit c.{i} d e groups=2 sizes=1,1\npermute * z heads=num_attention_heads")
	f.Add("name x\tdoc #1 # 2\nregex ^a#b$ $1=c\nunstack x a.{e} b.{e} sizes=hidden_size-1,1")
	f.Add("name x\ncovers v1 # c\ntranspose a.{i} b.{i}\nthen\nunstack x c.{e}.{e+1} d.{e} dim=1\nthen\nrename b.{i} q.{i*2}")
	f.Add("name x\nrename a b add=-1\nunstack x y.{e} add=0.5\nthen\nrename b c add=1e-3\ntranspose y.0 z\nthen\nrename z w add=2")
	f.Add("name x\nabsent model.layers.{num_attention_heads*2-1}.* why # not\nabsent v.* a #b\nabsent w.{hidden_size/0} z")
	f.Add("name x\ntranspose x t\nthen\nconcat t+x j dim=1 dtypes=F32\ndrop t no\nthen\nflatten j k dims=0,1\nconcat a+b ab dim=0 every=hidden_size-1")
	f.Add("name x\nrename a b dtypes=BF16,F32\nconcat b+c d every=1\nthen\ntranspose d e\nflatten x y")
	f.Fuzz(func(t *testing.T, src string) {
		a, err := Parse("fuzz", src)
		if err != nil {
			if a != nil {
				t.Fatal("an adapter with an error")
			}
			return
		}
		if a.Name == "" || a.Source != src {
			t.Fatalf("parsed %+v", a)
		}
		in := infos("layers.0.attention.wq.weight", "a.b.c", "x", "a", "b", "c")
		in[2].Shape = []uint64{4, 2, 2}
		v := Chain{a}.ApplyLimit(in, Env{"num_attention_heads": 1, "hidden_size": 2}, 64)
		if len(v.Tensors) > 64 {
			t.Fatalf("%d tensors past the limit", len(v.Tensors))
		}
		// Every segment lies inside its physical tensor, every rule named
		// is the adapter's, and a shift is finite and never on a tensor
		// read transposed.
		for _, lt := range v.Tensors {
			if math.IsInf(lt.Add, 0) || math.IsNaN(lt.Add) || lt.Add != 0 && lt.Transposed {
				t.Fatalf("%s: add %v, transposed %v", lt.Name, lt.Add, lt.Transposed)
			}
			var total uint64
			row := uint64(lt.DType.Bits() / 8)
			if n := len(lt.Shape); n > 0 {
				row *= lt.Shape[n-1]
			}
			for _, sg := range lt.Segments {
				if sg.Source < 0 || sg.Source >= len(in) || sg.Length == 0 || sg.Offset+sg.Length > in[sg.Source].Size() {
					t.Fatalf("%s: segment %+v outside its source", lt.Name, sg)
				}
				// A tile read transposed holds whole rows, in a tensor read as it comes.
				if sg.Transposed && (lt.Transposed || lt.Interleave != nil || row == 0 || total%row != 0 || sg.Length%row != 0) {
					t.Fatalf("%s %v: tile %+v of no whole rows of %d bytes at %d", lt.Name, lt.Shape, sg, row, total)
				}
				total += sg.Length
			}
			// An interleave's units make whole rounds of its bytes.
			var round uint64
			for _, u := range lt.Interleave {
				round += u
			}
			if lt.Interleave != nil && (round == 0 || total%round != 0) {
				t.Fatalf("%s: units %v of %d bytes", lt.Name, lt.Interleave, total)
			}
			if lt.Rule != "" && !strings.HasPrefix(lt.Rule, a.Name+":") {
				t.Fatalf("%s: rule %q", lt.Name, lt.Rule)
			}
		}
		for _, ab := range v.Absent {
			if ab.Glob == "" || ab.Reason == "" || !strings.HasPrefix(ab.Rule, a.Name+":") || strings.Contains(ab.Glob, "{") {
				t.Fatalf("absent %+v", ab)
			}
		}
	})
}
