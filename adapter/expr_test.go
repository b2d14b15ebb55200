package adapter

import (
	"math"
	"strings"
	"testing"
)

func TestExpressions(t *testing.T) {
	env := Env{"num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
		"big": math.MaxInt64, "huge": math.MaxInt64 + 1, "zero": 0}
	tests := []struct {
		src     string
		want    int64
		wantErr string
	}{
		{"num_attention_heads/num_key_value_heads*head_dim", 512, ""},
		{"head_dim", 128, ""},
		{"2+3*4", 14, ""},
		{"2*3+4*5-6/2", 23, ""},
		{"hidden_size-1+1", 4096, ""},
		{"1-2", -1, ""},
		{"big", math.MaxInt64, ""},
		{"big-1+1", math.MaxInt64, ""},
		{"9223372036854775807", math.MaxInt64, ""},
		{"7/2", 0, "not a whole number"},
		{"missing", 0, "config.json has no missing"},
		{"1/0", 0, "not a whole number"},
		{"hidden_size/zero", 0, "not a whole number"},
		{"huge", 0, "too large"},
		{"big+1", 0, "overflows"},
		{"0-big-2", 0, "overflows"},
		{"big*2", 0, "overflows"},
		{"hidden_size*hidden_size*hidden_size*hidden_size*hidden_size*hidden_size", 0, "overflows"},
		{"0-big-1", math.MinInt64, ""},
		{"(0-big-1)", 0, "unexpected"},
	}
	for _, tt := range tests {
		e, err := parseExpr(tt.src)
		if err != nil {
			if tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parse %s: %v", tt.src, err)
			}
			continue
		}
		got, err := e.eval(env, false)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("%s = %d, %v; want %d", tt.src, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s = %d, %v; want an error with %q", tt.src, got, err, tt.wantErr)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		a, b                int64
		add, sub, mul       int64
		addOK, subOK, mulOK bool
	}{
		{2, 3, 5, -1, 6, true, true, true},
		{maxI, 1, 0, maxI - 1, maxI, false, true, true},
		{minI, 1, minI + 1, 0, minI, true, false, true},
		{minI, -1, 0, minI + 1, 0, false, true, false},
		{-1, minI, 0, maxI, 0, false, true, false},
		{maxI, maxI, 0, 0, 0, false, true, false},
		{1 << 32, 1 << 31, 1<<32 + 1<<31, 1 << 31, 0, true, true, false},
		{0, minI, minI, 0, 0, true, false, true},
	}
	for _, tt := range tests {
		if got, ok := add64(tt.a, tt.b); ok != tt.addOK || ok && got != tt.add {
			t.Errorf("%d + %d = %d, %v", tt.a, tt.b, got, ok)
		}
		if got, ok := sub64(tt.a, tt.b); ok != tt.subOK || ok && got != tt.sub {
			t.Errorf("%d - %d = %d, %v", tt.a, tt.b, got, ok)
		}
		if got, ok := mul64(tt.a, tt.b); ok != tt.mulOK || ok && got != tt.mul {
			t.Errorf("%d * %d = %d, %v", tt.a, tt.b, got, ok)
		}
	}
}
