package adapter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A nameTemplate is the tensors of one side whose names differ only in
// their numeric segments (the indices: layer, expert) and that have one
// shape: "layers.{}.attention.wq.weight" [4096, 4096] x 32.
type nameTemplate struct {
	key   string   // the name with "{}" for each index segment
	segs  []string // its segments, "" at the index positions
	at    []int    // the positions of the index segments
	shape []uint64
	// members are the tensors (indices into the side's tensors) with their
	// index values; first and last in index order.
	members []member
	dims    []indexSet // per index dimension, the values it takes
	// safe says every literal segment can be written in the rule language.
	safe bool
}

type member struct {
	tensor int
	index  []uint64
}

// An indexSet is the distinct values one index dimension takes.
type indexSet struct {
	n        int
	min, max uint64
	sum      uint64 // with n, min and max a cheap fingerprint of the set
}

func (s indexSet) dense(n uint64) bool { return s.n == int(n) && s.min == 0 && s.max == n-1 }

func (t *nameTemplate) count() int { return len(t.members) }

func (t *nameTemplate) String() string {
	return t.key + " " + safetensors.FormatShape(t.shape) + " x" + strconv.Itoa(t.count())
}

// indexValue parses a name segment that is an index: decimal digits in
// canonical form ("0", "12", not "012"), at most nine of them.
func indexValue(seg string) (uint64, bool) {
	if len(seg) == 0 || len(seg) > 9 || (seg[0] == '0' && len(seg) > 1) {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(seg, 10, 64)
	return v, err == nil
}

// safeSegment reports whether a literal name segment can stand in a rule
// as itself: letters, digits, "_" and "-". Anything else (a "#" that would
// start a comment, spaces and newlines that would end the word or the line,
// "{", "*", "?", "+", "=" that mean something in patterns and options)
// makes the template one inference refuses to write.
func safeSegment(seg string) bool {
	if seg == "" {
		return false
	}
	for _, r := range seg {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// templatesOf groups tensors into templates, in the order their first
// member comes; it stops at max templates.
func templatesOf(tensors []safetensors.TensorInfo, limit int) ([]*nameTemplate, error) {
	byKey := map[string]int{}
	var out []*nameTemplate
	var idx []uint64
	var key []byte
	for i, t := range tensors {
		// The key is the name with its indices as "{}", a space and the
		// shape, built without splitting: most names join a template.
		idx, key = idx[:0], key[:0]
		for rest, first := t.Name, true; ; first = false {
			s, after, more := strings.Cut(rest, ".")
			if !first {
				key = append(key, '.')
			}
			if v, ok := indexValue(s); ok {
				idx = append(idx, v)
				key = append(key, "{}"...)
			} else {
				key = append(key, s...)
			}
			if !more {
				break
			}
			rest = after
		}
		key = append(key, ' ')
		for d, n := range t.Shape {
			if d > 0 {
				key = append(key, ',')
			}
			key = strconv.AppendUint(key, n, 10)
		}
		j, ok := byKey[string(key)]
		if !ok {
			segs := strings.Split(t.Name, ".")
			if len(out) >= limit {
				return nil, fmt.Errorf("more than %d distinct name templates (names that differ in more than their numeric segments, or in shape): inference works on at most %d a side (InferOptions.MaxTemplates)", limit, limit)
			}
			nt := &nameTemplate{shape: t.Shape, safe: true}
			for k, s := range segs {
				if _, isIndex := indexValue(s); isIndex {
					nt.at = append(nt.at, k)
					nt.segs = append(nt.segs, "")
					continue
				}
				nt.segs = append(nt.segs, s)
				nt.safe = nt.safe && safeSegment(s)
			}
			k, _, _ := strings.Cut(string(key), " ")
			nt.key = k
			j = len(out)
			byKey[string(key)] = j
			out = append(out, nt)
		}
		out[j].members = append(out[j].members, member{tensor: i, index: slices.Clone(idx)})
	}
	for _, t := range out {
		t.dims = make([]indexSet, len(t.at))
		for d := range t.dims {
			seen := map[uint64]bool{}
			s := indexSet{min: ^uint64(0)}
			for _, m := range t.members {
				v := m.index[d]
				if seen[v] {
					continue
				}
				seen[v] = true
				s.n++
				s.min, s.max, s.sum = min(s.min, v), max(s.max, v), s.sum+v
			}
			t.dims[d] = s
		}
		slices.SortFunc(t.members, func(a, b member) int { return slices.Compare(a.index, b.index) })
	}
	return out, nil
}

// wrapperSegments are the path segments that wrappers add (DDP, torch.compile,
// FSDP): names equal without them are the same tensor.
var wrapperSegments = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"module": true, "_orig_mod": true, "_fsdp_wrapped_module": true, "_checkpoint_wrapped_module": true}
})

// bareKey is a template key without wrapper segments.
func bareKey(key string) string {
	segs := strings.Split(key, ".")
	kept := segs[:0]
	for _, s := range segs {
		if !wrapperSegments()[s] {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, ".")
}

// sameName reports whether two template keys name the same tensor once
// wrapper segments and a leading prefix on either side are set aside
// ("module.model.layers.{}.x" and "model.layers.{}.x"; "student.model.norm"
// and "model.norm"; "model.model.x" and "model.x").
func sameName(exp, pub string) bool {
	e, p := bareKey(exp), bareKey(pub)
	if e == p {
		return true
	}
	var short, long string
	if len(e) < len(p) {
		short, long = e, p
	} else {
		short, long = p, e
	}
	return strings.Count(short, ".") >= 1 && strings.HasSuffix(long, "."+short)
}
