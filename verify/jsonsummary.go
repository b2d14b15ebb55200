package verify

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"strconv"
)

// Summarising large JSON files beside the weights (tokenizer.json's
// vocabulary, vocab.json) as a stream of tokens: what is kept of a value is
// a digest by meaning (the same when jsonEqual says equal), its member
// count, and the value itself only while it is small. Memory is then
// bounded by the kept values, not by the file.

// maxKeptValue bounds the bytes of one value kept decoded to say how it
// changed; larger values are compared by digest and count only.
const maxKeptValue = 1 << 20

// A jsonSummary is what is kept of one JSON value.
type jsonSummary struct {
	digest uint64
	// count is the members of an object or array.
	count int
	// value is the decoded value (numbers as json.Number) when kept.
	value any
	kept  bool
}

// same reports whether two summarised values are equal by meaning.
func (s jsonSummary) same(t jsonSummary) bool { return s.digest == t.digest && s.count == t.count }

// summarySeed is this process's seed for digests: both sides of a
// comparison are summarised by the same process.
var summarySeed = maphash.MakeSeed()

// errNotJSON marks a file that is not well-formed JSON, as opposed to one
// that could not be read.
var errNotJSON = errors.New("not JSON")

// A tokenStream reads JSON tokens, telling a read error from bad JSON.
type tokenStream struct {
	dec *json.Decoder
	r   *errReader
}

func newTokenStream(r io.Reader) *tokenStream {
	er := &errReader{r: r}
	dec := json.NewDecoder(er)
	dec.UseNumber()
	return &tokenStream{dec: dec, r: er}
}

// token is the next token; a read error is returned as it is, bad JSON
// (or an early end) as errNotJSON.
func (ts *tokenStream) token() (json.Token, error) {
	t, err := ts.dec.Token()
	if err == nil {
		return t, nil
	}
	if ts.r.err != nil {
		return nil, ts.r.err
	}
	return nil, errNotJSON
}

// errReader remembers the first error other than io.EOF of its reader.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// summarise reads the value whose first token is t; keep says whether to
// keep it decoded while it stays under maxKeptValue.
func (ts *tokenStream) summarise(t json.Token, keep bool) (jsonSummary, error) {
	budget := maxKeptValue
	if !keep {
		budget = -1
	}
	return ts.value(t, &budget)
}

// value summarises one value; budget is what may still be kept decoded (a
// negative budget keeps nothing).
func (ts *tokenStream) value(t json.Token, budget *int) (jsonSummary, error) {
	switch t := t.(type) {
	case json.Delim:
		if t == '{' {
			return ts.object(budget)
		}
		if t == '[' {
			return ts.array(budget)
		}
		return jsonSummary{}, errNotJSON
	case string:
		return ts.scalar(t, maphash.String(summarySeed, "s"+t), len(t), budget), nil
	case json.Number:
		return ts.scalar(t, numberDigest(t), len(t), budget), nil
	case bool:
		d := uint64(1)
		if t {
			d = 2
		}
		return ts.scalar(t, d, 8, budget), nil
	case nil:
		return ts.scalar(nil, 3, 8, budget), nil
	}
	return jsonSummary{}, errNotJSON
}

func (ts *tokenStream) scalar(v any, digest uint64, size int, budget *int) jsonSummary {
	s := jsonSummary{digest: digest}
	*budget -= size // once negative, nothing more is kept
	if *budget >= 0 {
		s.value, s.kept = v, true
	}
	return s
}

// numberDigest digests a number by value, as jsonEqual compares them:
// 10000 and 1e4 alike; a number that does not parse by its text.
func numberDigest(n json.Number) uint64 {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return maphash.String(summarySeed, "n"+string(n))
	}
	if f == 0 {
		f = 0 // -0 is 0
	}
	return mix(4, math.Float64bits(f))
}

// mix combines two digests, in order.
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>29
}

// members reads an object's members after its '{', each value by each,
// and summarises the object: members digested in any order, since
// jsonEqual does not care about it.
func (ts *tokenStream) members(each func(k string, t json.Token) (jsonSummary, error)) (jsonSummary, error) {
	s := jsonSummary{digest: 5}
	var sum uint64
	for {
		t, err := ts.token()
		if err != nil {
			return s, err
		}
		if t == json.Delim('}') {
			break
		}
		k, ok := t.(string)
		if !ok {
			return s, errNotJSON
		}
		if t, err = ts.token(); err != nil {
			return s, err
		}
		v, err := each(k, t)
		if err != nil {
			return s, err
		}
		sum += mix(maphash.String(summarySeed, k), v.digest)
		s.count++
	}
	s.digest = mix(s.digest, sum)
	return s, nil
}

// object summarises an object after its '{', kept decoded while within
// budget.
func (ts *tokenStream) object(budget *int) (jsonSummary, error) {
	var m map[string]any
	if *budget >= 0 {
		m = make(map[string]any)
	}
	s, err := ts.members(func(k string, t json.Token) (jsonSummary, error) {
		*budget -= len(k)
		v, err := ts.value(t, budget)
		if m != nil && v.kept && *budget >= 0 {
			m[k] = v.value
		} else {
			m = nil
		}
		return v, err
	})
	if err == nil && m != nil && *budget >= 0 {
		s.value, s.kept = m, true
	}
	return s, err
}

// array summarises an array after its '['.
func (ts *tokenStream) array(budget *int) (jsonSummary, error) {
	s := jsonSummary{digest: 6}
	var l []any
	keep := *budget >= 0
	for {
		t, err := ts.token()
		if err != nil {
			return s, err
		}
		if t == json.Delim(']') {
			break
		}
		v, err := ts.value(t, budget)
		if err != nil {
			return s, err
		}
		s.digest = mix(s.digest, v.digest)
		s.count++
		if keep && v.kept && *budget >= 0 {
			l = append(l, v.value)
		} else {
			keep, l = false, nil
		}
	}
	if keep && *budget >= 0 {
		if l == nil {
			l = []any{}
		}
		s.value, s.kept = l, true
	}
	return s, nil
}

// A tokenizerFile is tokenizer.json summarised: its top-level members in
// file order, and the model's members when the model is an object.
type tokenizerFile struct {
	order    []string
	sections map[string]jsonSummary
	model    map[string]jsonSummary
}

// summariseTokenizer reads tokenizer.json as a stream; errNotJSON when it
// is not a JSON object.
func summariseTokenizer(r io.Reader) (*tokenizerFile, error) {
	ts := newTokenStream(r)
	t, err := ts.token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errNotJSON
	}
	f := &tokenizerFile{sections: make(map[string]jsonSummary)}
	_, err = ts.members(func(k string, t json.Token) (jsonSummary, error) {
		var s jsonSummary
		var err error
		if k == "model" && t == json.Delim('{') {
			f.model = make(map[string]jsonSummary)
			s, err = ts.members(func(k string, t json.Token) (jsonSummary, error) {
				// The vocabulary and merges are never kept decoded.
				v, err := ts.summarise(t, k != "vocab" && k != "merges")
				f.model[k] = v
				return v, err
			})
		} else {
			s, err = ts.summarise(t, true)
		}
		if _, dup := f.sections[k]; !dup {
			f.order = append(f.order, k)
		}
		f.sections[k] = s
		return s, err
	})
	if err != nil {
		return nil, err
	}
	// Text after the object is not JSON, as json.Unmarshal would say.
	if _, err := ts.dec.Token(); err != io.EOF {
		if ts.r.err != nil {
			return nil, ts.r.err
		}
		return nil, errNotJSON
	}
	return f, nil
}
