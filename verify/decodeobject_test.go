package verify

import (
	"encoding/json"
	"testing"
)

// TestDecodeObject: decodeObject reads what a json.Decoder with UseNumber
// reads (numbers as written, the first value of a file with more after
// it), one member at a time.
func TestDecodeObject(t *testing.T) {
	tests := []struct {
		in   string
		want string // the result re-encoded; "null" for nil
	}{
		{`{"a":1e400,"b":{"c":[1.50,"x"]},"t":"{{ m }}\n"}`, `{"a":1e400,"b":{"c":[1.50,"x"]},"t":"{{ m }}\n"}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":1} trailing`, `{"a":1}`},
		{`null`, `null`},
		{`[1]`, `null`},
		{`{"a":`, `null`},
		{``, `null`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(decodeObject([]byte(tt.in)))
		if err != nil || string(got) != tt.want {
			t.Errorf("decodeObject(%q) = %s (%v), want %s", tt.in, got, err, tt.want)
		}
	}
}
