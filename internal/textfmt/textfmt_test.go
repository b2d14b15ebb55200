package textfmt

import (
	"math"
	"testing"
)

func TestThousandsAndPlural(t *testing.T) {
	tests := []struct{ got, want string }{
		{Thousands(0), "0"},
		{Thousands(999), "999"},
		{Thousands(1000), "1,000"},
		{Thousands(uint64(math.MaxUint64)), "18,446,744,073,709,551,615"},
		{Thousands(-1234567), "-1,234,567"},
		{Plural(1, "tensor"), "1 tensor"},
		{Plural(0, "tensor"), "0 tensors"},
		{Plural(18867, "tensor"), "18,867 tensors"},
		{Plural(2, "match"), "2 matches"},
		{Plural(3, "class"), "3 classes"},
		{Plural(2, "entry"), "2 entries"},
		{Plural(2, "key"), "2 keys"},
		{Float(0.0012345), "0.001234"},
		{Float(1.5e-7), "1.5e-07"},
		{Quote("model.layers.0"), "model.layers.0"},
		{Quote("a\x1b[2Jb"), `a\x1b[2Jb`},
		{Quote("名前"), "名前"},
		{IndexRanges([]int{3, 0, 1, 2, 5, 7, 8, 9, 5}), "0..3,5,7..9"},
		{IndexRanges(nil), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
