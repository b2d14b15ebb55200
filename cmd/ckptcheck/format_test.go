package main

import (
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func TestNaturalCompare(t *testing.T) {
	want := []string{"a", "layers.1.x", "layers.2.x", "layers.10.x", "layers.10.y", "layers.100", "lm_head", "x01", "x1", "x2"}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, naturalCompare)
	if !slices.Equal(got, want) {
		t.Errorf("got %v", got)
	}
}

func TestHumanFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{humanCount(4_022_468_096), "4.02B"},
		{humanCount(999), "999"},
		{humanBytes(8_044_936_192), "8.04 GB"},
		{groupDigits(4022468096), "4,022,468,096"},
		{groupDigits(12), "12"},
		{verify.IndexRanges([]int{3, 0, 1, 2, 7, 9, 10}), "0..3,7,9..10"},
		{safetensors.FormatShape([]uint64{}), "[]"},
		{quote("a\x1b"), `"a\x1b"`},
		{quote("plain.name"), "plain.name"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
