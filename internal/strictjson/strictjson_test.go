package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// valid decodes b whole with the strict decoder.
func valid(b []byte) bool {
	if !Valid(b) {
		return false
	}
	d := NewDecoder(b, 0)
	return d.Skip() == nil && d.End()
}

func TestStrictness(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{` {"a":[1,-2.5e3,true,false,null,"\u00e9\ud83d\ude00"]} `, true},
		{`{"a":1,}`, false},
		{`[1,]`, false},
		{`01`, false},
		{`1.`, false},
		{`1e`, false},
		{`1e999`, false},
		{`-`, false},
		{`"\ud800"`, false},
		{`"\udc00\ud800"`, false},
		{"\"a\x01\"", false},
		{`"\x"`, false},
		{`tru`, false},
		{`{} {}`, false},
		{strings.Repeat("[", 127) + strings.Repeat("]", 127), true},
		{strings.Repeat("[", 128) + strings.Repeat("]", 128), false},
	}
	for _, tt := range tests {
		if got := valid([]byte(tt.in)); got != tt.ok {
			t.Errorf("%.40q: valid = %v, want %v", tt.in, got, tt.ok)
		}
	}
}

func TestUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"1.0", 0, false},
		{"1e2", 0, false},
		{"007", 0, false},
	}
	for _, tt := range tests {
		v, err := NewDecoder([]byte(tt.in), 0).Uint()
		if (err == nil) != tt.ok || (tt.ok && v != tt.want) {
			t.Errorf("%s: %d, %v", tt.in, v, err)
		}
	}
}

// FuzzDecoder: no input panics, and what the strict decoder accepts is
// JSON to encoding/json as well (it is stricter, never looser).
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `-0.5e-3`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if valid(b) && !json.Valid(b) {
			t.Fatalf("accepted %q, which is not JSON", b)
		}
	})
}
