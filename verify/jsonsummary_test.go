package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func summaryOf(t testing.TB, s string, keep bool) (jsonSummary, error) {
	ts := newTokenStream(strings.NewReader(s))
	tok, err := ts.token()
	if err != nil {
		return jsonSummary{}, err
	}
	return ts.summarise(tok, keep)
}

// TestSummaryDigestByMeaning: two values have the same digest when
// jsonEqual says they are equal, whatever their layout.
func TestSummaryDigestByMeaning(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`{"a": 1, "b": [1, 2]}`, `{"b":[1,2],"a":1.0}`, true},
		{`1e-06`, `0.000001`, true},
		{`-0`, `0`, true},
		{`[1, 2]`, `[2, 1]`, false},
		{`{"a": 1}`, `{"a": 1, "b": null}`, false},
		{`"x"`, `"y"`, false},
		{`{"a": "b"}`, `{"b": "a"}`, false},
		{`[]`, `{}`, false},
		{`null`, `false`, false},
	} {
		x, errX := summaryOf(t, tt.a, true)
		y, errY := summaryOf(t, tt.b, true)
		if errX != nil || errY != nil {
			t.Fatalf("%s, %s: %v %v", tt.a, tt.b, errX, errY)
		}
		if x.same(y) != tt.same {
			t.Errorf("%s vs %s: same %v, want %v", tt.a, tt.b, x.same(y), tt.same)
		}
		if !x.kept || !jsonEqual(x.value, rawDecode(t, tt.a)) {
			t.Errorf("%s: kept %v as %#v", tt.a, x.kept, x.value)
		}
	}
	big := `[` + strings.Repeat(`"0123456789ab",`, maxKeptValue/10) + `"x"]`
	s, err := summaryOf(t, big, true)
	if err != nil || s.kept || s.count != maxKeptValue/10+1 {
		t.Errorf("a large value: kept %v, count %d, %v", s.kept, s.count, err)
	}
}

func rawDecode(t testing.TB, s string) any {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzSummariseTokenizer: any bytes are summarised or refused as not
// JSON, never a panic; a JSON object is refused only when it is not
// valid JSON.
func FuzzSummariseTokenizer(f *testing.F) {
	f.Add([]byte(tokJSON))
	f.Add([]byte(`{"model": [1], "x": {"y": null}}`))
	f.Add([]byte(`{"a":1}{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := summariseTokenizer(bytes.NewReader(b))
		var m map[string]json.RawMessage
		valid := json.Unmarshal(b, &m) == nil && m != nil
		if valid != (err == nil) {
			t.Fatalf("%q: valid %v, summarised with %v", b, valid, err)
		}
		if err == nil && len(tf.sections) != len(m) {
			t.Fatalf("%q: %d sections, want %d", b, len(tf.sections), len(m))
		}
	})
}
