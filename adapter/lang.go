package adapter

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

type opKind int

const (
	opStripPrefix opKind = iota
	opRemoveSegment
	opRegex
	opRename
	opUnstack
	opSplit
	opConcat
	opPermute
	opTranspose
	opDrop
	opIgnore
	opFlatten
)

func (k opKind) rewrite() bool { return k <= opRegex }

// A rule is one line of an adapter file.
type rule struct {
	kind    opKind
	text    string // the line as written, words single-spaced, for errors
	where   string // "adapter:line: text", for Tensor.Rule and RuleError
	line    int
	src     []pattern // concat has several
	dst     []template
	literal string // strip-prefix, remove-segment
	re      *regexp.Regexp
	reLit   string // what every match of re contains (starts with, when anchored), for quick rejection
	reStart bool   // re is anchored at the start of the name
	repl    string
	reason  string
	stage   int // the rules after the n-th "then" line
	dim     int
	groups  *expr
	every   *expr               // concat: rows of each source in turn
	flatten [2]int              // flatten: the first and last dimensions merged; zero for 0, 1
	dtypes  []safetensors.DType // dtypes=: the stored dtypes the rule maps, nil for all
	sizes   []*expr
	heads   *expr
	add     float64 // add=: added to every value of what the mapping makes
}

// A ruleSpec says how one rule word is written: adding a rule kind is an
// entry here plus its mapping code in apply.go.
type ruleSpec struct {
	kind     opKind
	min, max int      // arguments, options aside; max < 0: no limit
	options  []string // the option keys it takes
	required []string // the options it cannot do without
	build    func(r *rule, args []string) error
}

var ruleSpecs = sync.OnceValue(func() map[string]ruleSpec {
	return map[string]ruleSpec{
		"strip-prefix":   {kind: opStripPrefix, min: 1, max: 1, build: buildLiteral},
		"remove-segment": {kind: opRemoveSegment, min: 1, max: 1, build: buildLiteral},
		"regex":          {kind: opRegex, min: 2, max: 2, build: buildRegex},
		"rename":         {kind: opRename, min: 2, max: 2, options: []string{"add", "dtypes"}, build: buildMapping},
		"unstack":        {kind: opUnstack, min: 2, max: -1, options: []string{"dim", "sizes", "add", "dtypes"}, build: buildMapping},
		"split":          {kind: opSplit, min: 2, max: -1, options: []string{"dim", "groups", "sizes", "add", "dtypes"}, build: buildMapping},
		"concat":         {kind: opConcat, min: 2, max: 2, options: []string{"dim", "every", "add", "dtypes"}, build: buildConcat},
		"permute":        {kind: opPermute, min: 2, max: 2, options: []string{"heads", "add", "dtypes"}, required: []string{"heads"}, build: buildMapping},
		"transpose":      {kind: opTranspose, min: 2, max: 2, options: []string{"dtypes"}, build: buildMapping},
		"flatten":        {kind: opFlatten, min: 2, max: 2, options: []string{"dims", "dtypes"}, build: buildMapping},
		"drop":           {kind: opDrop, min: 2, max: -1, build: buildDrop},
		"ignore":         {kind: opIgnore, min: 1, max: 1, build: buildMapping},
	}
})

// optionSpecs parse an option's value into the rule.
var optionSpecs = map[string]func(r *rule, v string) error{
	"dim": func(r *rule, v string) error {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 {
			return fmt.Errorf("dim=%s: want a dimension number", v)
		}
		r.dim = d
		return nil
	},
	"groups": func(r *rule, v string) (err error) {
		r.groups, err = parseExpr(v)
		return err
	},
	"dims": func(r *rule, v string) error {
		a, b, ok := strings.Cut(v, ",")
		first, err1 := strconv.Atoi(a)
		last, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || first < 0 || last <= first {
			return fmt.Errorf("dims=%s: want two dimension numbers, the first lower", v)
		}
		r.flatten = [2]int{first, last}
		return nil
	},
	"dtypes": func(r *rule, v string) error {
		for name := range strings.SplitSeq(v, ",") {
			d, ok := safetensors.ParseDType(name)
			if !ok {
				return fmt.Errorf("dtypes=%s: %q is no dtype", v, name)
			}
			r.dtypes = append(r.dtypes, d)
		}
		return nil
	},
	"every": func(r *rule, v string) (err error) {
		r.every, err = parseExpr(v)
		return err
	},
	"sizes": func(r *rule, v string) error {
		for s := range strings.SplitSeq(v, ",") {
			e, err := parseExpr(s)
			if err != nil {
				return err
			}
			r.sizes = append(r.sizes, e)
		}
		return nil
	},
	"heads": func(r *rule, v string) (err error) {
		r.heads, err = parseExpr(v)
		return err
	},
	"add": func(r *rule, v string) error {
		a, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(a, 0) || math.IsNaN(a) || a == 0 {
			return fmt.Errorf("add=%s: want a finite number other than 0", v)
		}
		r.add = a
		return nil
	},
}

// directives set the adapter's own fields; "doc", "family" and "covers"
// may repeat.
var directives = map[string]func(a *Adapter, args []string) error{
	"name": func(a *Adapter, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("name takes one word")
		}
		a.Name = args[0]
		return nil
	},
	"doc": func(a *Adapter, args []string) error {
		a.Doc = strings.TrimSpace(a.Doc + " " + strings.Join(args, " "))
		return nil
	},
	"family": func(a *Adapter, args []string) error {
		a.Families = append(a.Families, args...)
		return nil
	},
	"covers": func(a *Adapter, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("covers takes the versions, tags or commits the adapter was checked against")
		}
		a.Covers = append(a.Covers, strings.Join(args, " "))
		return nil
	},
	"auto": func(a *Adapter, args []string) error {
		if len(args) == 1 {
			for k := range autoNames {
				if autoNames[k] == args[0] {
					a.Auto = Auto(k)
					return nil
				}
			}
		}
		return fmt.Errorf("auto takes one of %s", strings.Join(autoNames[:], ", "))
	},
	"order": func(a *Adapter, args []string) error {
		n, err := strconv.Atoi(strings.Join(args, " "))
		if err != nil {
			return fmt.Errorf("order takes an integer")
		}
		a.Order = n
		return nil
	},
}

// words splits a line into words, leaving out its comment.
func words(line string) []string {
	w := strings.Fields(line)
	if len(w) == 0 || strings.HasPrefix(w[0], "#") {
		return nil
	}
	text := w[0] == "doc" || w[0] == "drop" || w[0] == "covers" || w[0] == "absent"
	for i, s := range w {
		if s == "#" || !text && strings.HasPrefix(s, "#") {
			return w[:i]
		}
	}
	return w
}

// Parse reads an adapter written in the adapter language; source names it
// in errors. The language is UTF-8 text, one directive or rule a line,
// words separated by spaces or tabs.
//
// A comment runs from a word that starts with "#" to the end of the line,
// so "#" inside a word is text ("regex ^a#b$ x"). In free text (doc TEXT,
// covers TEXT, drop's and absent's REASON) only a "#" standing alone as a
// word starts a comment, so "doc see #12" keeps "#12" and "doc text  # note"
// drops the note.
//
// Directives say what the adapter is:
//
//	name NAME                  the adapter's name (required)
//	doc TEXT                   a line of documentation
//	family MODEL_TYPE...       config.json model_type values it is for (auto only)
//	covers TEXT                the framework versions, tags or commit ranges whose
//	                           names it was checked against (one line each;
//	                           shown by `ckptcheck adapters`)
//	auto structural            how "auto" tries it (see Candidates); the default:
//	                           after the wrappers, when it maps any name and its
//	                           family fits the published model_type
//	auto wrapper               whenever it changes any name; every wrapper that
//	                           does is applied first, in order, before one
//	                           structural adapter (ddp, compile, fsdp)
//	auto never                 only when named (hf, the identity)
//	order N                    where a preset comes among the presets of its
//	                           kind: lower first, then by name (default 0); auto
//	                           keeps the earlier of two chains that match as well,
//	                           so simpler schemes take lower numbers (a user's
//	                           adapters go before the presets, in the order given)
//
// Rewrites change a name and go on to the next rule:
//
//	strip-prefix PREFIX        remove PREFIX from names that start with it
//	remove-segment SEGMENT     remove every dot-separated path segment SEGMENT
//	regex REGEXP REPLACEMENT   Go regexp replace, $1 for groups
//
// Mappings end a tensor's trip through the file; the first that matches wins:
//
//	rename SRC DST                       one tensor to another name
//	unstack SRC DST... [dim=N] [sizes=E,...]
//	                                     dim 0 indexes {e}: one tensor per slice; with
//	                                     several DSTs each slice is split along its dim N
//	                                     (default 0), as split does
//	split SRC DST... [dim=N] [groups=E] [sizes=E,...]
//	                                     along dim N (default 0), made of `groups` repeats
//	                                     of blocks of the given sizes (default equal parts)
//	concat SRC+SRC... DST [dim=N] [every=E]
//	                                     several tensors joined along dim N into one, in
//	                                     the order listed, whichever comes first in the file;
//	                                     with every, dim N takes E of each source's in turn,
//	                                     the sources of one size (every=1: gate and up rows
//	                                     alternate): no bytes move, the tensor reads its
//	                                     sources interleaved (see Tensor.Interleave)
//	permute SRC DST heads=E              rotary row order: DST = SRC.view(heads, rows/heads/2,
//	                                     2, cols).transpose(1, 2).reshape(rows, cols)
//	transpose SRC DST                    DST = SRC.mT: the last two dimensions swapped.
//	                                     No bytes move: the tensor reads its segments as
//	                                     the transpose, tile by tile (see Tensor.Transposed)
//	flatten SRC DST [dims=A,B]           DST = SRC.flatten(A, B): dimensions A to B merged
//	                                     into one (default 0,1), the elements in their order;
//	                                     a tensor read transposed or holding transposed tiles
//	                                     keeps the dimensions it reads so
//	drop SRC REASON...                   no counterpart, said as adapter_dropped
//	ignore SRC                           not a weight (buffers), left out silently
//
// A line "absent GLOB REASON..." names the other side's tensors, in HF
// naming, that this side holds in no form the adapter reads: the
// conversion leaves them out (a vision tower written to another file) or
// keeps them in a layout the rules cannot rebuild. GLOB is a Glob whose
// segments in braces are expressions over config values
// ("model.layers.{num_hidden_layers}.*": the layer after the last); a
// value the config lacks makes the line say nothing. A comparison
// reports such tensors once a line, with the reason, not as missing keys
// (View.Absent).
//
// Every mapping but drop and ignore takes dtypes=A,B,... (safetensors
// dtype names): it maps only tensors stored in one of them, and the others
// go on to the rules after it; a concat maps only when every source is
// (GGUF block-typed tensors enter a view as U8 rows of blocks, so
// "dtypes=F32,F16,BF16" keeps a rule to the plain ones).
//
// Rename, unstack, split, concat and permute take a value rule too:
// add=X (a decimal number) says the stored values are X off the logical
// ones, which are the stored values plus X (llama.cpp stores Gemma's norm
// weights w as w+1: "rename blk.{i}.attn_norm.weight
// model.layers.{i}.input_layernorm.weight add=-1"). Nothing is read here:
// the tensor carries Add, and the value comparison applies it as it
// decodes. A tensor read transposed takes no shift, before or after.
//
// A line "then" ends a stage: the rules after it see the tensors the rules
// before it made, under their new names, as a chain of adapters would (a
// fused QKV split into wq, wk and wv, then wq and wk permuted). Layouts
// compose: a later stage may cut a tensor an earlier one cut, and a
// transposed tensor may be cut along its leading dimensions (an expert
// stack), never along the two it swaps.
//
// Patterns SRC are dotted names in which {x} matches one path segment and
// binds x for the DST templates; a pattern holding "*" or "?" is a Glob over
// the whole name instead, and captures nothing. A mapping sees the name as
// the rewrites before it left it; so do concat's other sources, which must
// capture the same names as the first. Options are the trailing KEY=VALUE
// words whose KEY is an option name (dim, groups, every, sizes, heads, add, dims, dtypes), and only
// for the rules that take options; any other word is an argument, "=" and
// all, so a template or a regex replacement may hold "=". Expressions E are
// integers and config.json fields (num_attention_heads, num_key_value_heads,
// head_dim, hidden_size, ...) with + - * /, in checked int64 arithmetic.
// A DST segment may be such an expression in braces over the pattern's
// numeric captures (named without braces) and config fields:
// "model.layers.{j+num_hidden_layers}.enorm.weight" for a pattern that
// captures {j}.
func Parse(source string, text string) (*Adapter, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s: not UTF-8 text", source)
	}
	a := &Adapter{Source: text, Auto: AutoStructural}
	once := map[string]bool{}
	stage := 0
	for n, line := range strings.Split(text, "\n") {
		w := words(line)
		if len(w) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", source, n+1, fmt.Sprintf(format, args...))
		}
		word, args := w[0], w[1:]
		if word == "then" {
			if len(args) > 0 {
				return nil, fail("then stands alone on its line")
			}
			stage++
			continue
		}
		if word == "absent" {
			r, err := parseAbsent(args)
			if err != nil {
				return nil, fail("%v", err)
			}
			r.line = n + 1
			a.absent = append(a.absent, r)
			continue
		}
		if set, ok := directives[word]; ok {
			if word != "doc" && word != "family" && word != "covers" {
				if once[word] {
					return nil, fail("a second %s line", word)
				}
				once[word] = true
			}
			if err := set(a, args); err != nil {
				return nil, fail("%v", err)
			}
			continue
		}
		spec, ok := ruleSpecs()[word]
		if !ok {
			return nil, fail("unknown rule %q", word)
		}
		r, err := spec.parse(args)
		if err != nil {
			return nil, fail("%s: %v", word, err)
		}
		r.line, r.text, r.stage = n+1, strings.Join(w, " "), stage
		a.rules = append(a.rules, r)
	}
	if a.Name == "" {
		return nil, fmt.Errorf("%s: no name line", source)
	}
	for _, r := range a.rules {
		r.where = a.Name + ":" + strconv.Itoa(r.line) + ": " + r.text
	}
	return a, nil
}

// parse builds a rule from its words: options off the end, then the
// arguments as the spec says.
func (spec ruleSpec) parse(args []string) (*rule, error) {
	r := &rule{kind: spec.kind}
	set := map[string]bool{}
	for len(spec.options) > 0 && len(args) > 0 {
		k, v, ok := strings.Cut(args[len(args)-1], "=")
		if _, known := optionSpecs[k]; !ok || !known {
			break
		}
		switch {
		case !slices.Contains(spec.options, k):
			return nil, fmt.Errorf("takes no %s= option", k)
		case set[k]:
			return nil, fmt.Errorf("%s= given twice", k)
		}
		set[k] = true
		if err := optionSpecs[k](r, v); err != nil {
			return nil, err
		}
		args = args[:len(args)-1]
	}
	if len(args) < spec.min || spec.max >= 0 && len(args) > spec.max {
		switch {
		case spec.min == spec.max:
			return nil, fmt.Errorf("takes %d arguments, not %d", spec.min, len(args))
		default:
			return nil, fmt.Errorf("takes %d or more arguments, not %d", spec.min, len(args))
		}
	}
	for _, k := range spec.required {
		if !set[k] {
			return nil, fmt.Errorf("needs %s=", k)
		}
	}
	if err := spec.build(r, args); err != nil {
		return nil, err
	}
	if r.sizes != nil && len(r.sizes) != len(r.dst) {
		return nil, fmt.Errorf("%d sizes for %d outputs", len(r.sizes), len(r.dst))
	}
	return r, checkCaptures(r)
}

func buildLiteral(r *rule, args []string) error {
	r.literal = args[0]
	return nil
}

func buildRegex(r *rule, args []string) (err error) {
	if r.re, err = regexp.Compile(args[0]); err != nil {
		return err
	}
	r.reLit, _ = r.re.LiteralPrefix()
	r.reStart = strings.HasPrefix(args[0], "^")
	r.repl = args[1]
	return nil
}

// buildMapping reads SRC DST...: rename, unstack, split, permute, ignore.
func buildMapping(r *rule, args []string) error {
	p, err := parsePattern(args[0])
	if err != nil {
		return err
	}
	r.src = []pattern{p}
	for _, s := range args[1:] {
		t, err := parseTemplate(s)
		if err != nil {
			return err
		}
		r.dst = append(r.dst, t)
	}
	return nil
}

func buildDrop(r *rule, args []string) error {
	r.reason = strings.Join(args[1:], " ")
	return buildMapping(r, args[:1])
}

// buildConcat reads SRC+SRC... DST. Every source can start the join, so
// each must capture what the others need.
func buildConcat(r *rule, args []string) error {
	for s := range strings.SplitSeq(args[0], "+") {
		p, err := parsePattern(s)
		if err != nil {
			return err
		}
		if p.glob != nil {
			return fmt.Errorf("source %s: a concat source cannot be a glob", s)
		}
		for _, q := range r.src {
			if q.text == s {
				return fmt.Errorf("source %s given twice", s)
			}
		}
		r.src = append(r.src, p)
	}
	if len(r.src) < 2 {
		return fmt.Errorf("want two or more sources joined by +")
	}
	want := r.src[0].captures()
	slices.Sort(want)
	for _, p := range r.src[1:] {
		got := p.captures()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("sources %s and %s capture different names", r.src[0].text, p.text)
		}
	}
	t, err := parseTemplate(args[1])
	r.dst = []template{t}
	return err
}

// checkCaptures makes sure every capture a template uses comes from the
// pattern ({e} from unstack, which binds it itself).
func checkCaptures(r *rule) error {
	bound := map[string]bool{}
	for _, p := range r.src {
		for _, c := range p.captures() {
			bound[c] = true
		}
	}
	if r.kind == opUnstack {
		if bound["{e}"] {
			return fmt.Errorf("%s captures {e}, which unstack binds to the slice", r.src[0].text)
		}
		bound["{e}"] = true
	}
	for _, t := range r.dst {
		for i, s := range t.segs {
			if t.exprs != nil && t.exprs[i] != nil {
				continue // its names are captures or config values
			}
			if isCapture(s) && !bound[s] {
				return fmt.Errorf("%s uses %s, which the pattern does not capture", t.text, s)
			}
		}
	}
	return nil
}
