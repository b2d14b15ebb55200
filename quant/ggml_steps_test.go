package quant

import (
	"encoding/binary"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func TestGGMLSteps(t *testing.T) {
	const half = 0x3800 // 0.5
	q8 := make([]byte, 34)
	binary.LittleEndian.PutUint16(q8, half)
	q8[2], q8[3] = 0, byte(0x81) // q = 0, −127
	q4 := make([]byte, 18)
	binary.LittleEndian.PutUint16(q4, half)
	q4[2] = 0xF8 // value 0: q = 8 (0·d); value 16: q = 15, the clamped top code
	q4k := make([]byte, 144)
	binary.LittleEndian.PutUint16(q4k, half)
	q4k[4], q4k[5] = 3, 5 // sub-blocks 0 and 1: scales 3 and 5
	tests := []struct {
		enc         tensorfile.Encoding
		block       []byte
		at          []int
		want        []float32
		compensated bool
	}{
		{tensorfile.Q8_0, q8, []int{0, 1}, []float32{0.5, 0.5 + 127.0/2048}, false},
		{tensorfile.Q4_0, q4, []int{0, 16}, []float32{0.5, 2 * (0.5 + 7.0/2048)}, false},
		{tensorfile.Q4_K, q4k, []int{0, 31, 32}, []float32{1.5 * (1 + 30.0/2048), 1.5 * (1 + 30.0/2048), 2.5 * (1 + 30.0/2048)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.enc.String(), func(t *testing.T) {
			c, _ := GGML(tt.enc)
			s, ok := c.(interface {
				Steps(Dims, uint64, uint64, [][]byte, []float32) error
				ErrorCompensated() bool
			})
			if !ok {
				t.Fatalf("%s states no steps", c)
			}
			n := tt.enc.Block().Elements
			dst := make([]float32, n)
			if err := s.Steps(Dims{Rows: 1, Cols: n}, 0, 1, [][]byte{tt.block}, dst); err != nil {
				t.Fatal(err)
			}
			for i, at := range tt.at {
				if dst[at] != tt.want[i] {
					t.Errorf("step %d = %v, want %v", at, dst[at], tt.want[i])
				}
			}
			if s.ErrorCompensated() != tt.compensated {
				t.Errorf("ErrorCompensated %v", !tt.compensated)
			}
			if err := s.Steps(Dims{Rows: 1, Cols: n}, 0, 1, [][]byte{tt.block[:1]}, dst); err == nil {
				t.Error("short data: no error")
			}
		})
	}
	for _, e := range []tensorfile.Encoding{tensorfile.Q4_1, tensorfile.Q5_0, tensorfile.Q5_1, tensorfile.Q2_K,
		tensorfile.Q3_K, tensorfile.Q5_K, tensorfile.Q6_K, tensorfile.MXFP4} {
		c, _ := GGML(e)
		if _, ok := c.(interface {
			Steps(Dims, uint64, uint64, [][]byte, []float32) error
		}); !ok {
			t.Errorf("%s states no steps", e)
		}
	}
}
