package tensorfile

import (
	"errors"
	"math/bits"
	"strconv"
)

// A Block is the geometry of an encoding: Elements elements are stored in
// Bytes bytes, and a tensor holds whole blocks. Formats use it to check a
// tensor's size from its shape without knowing how to decode it.
type Block struct {
	Elements uint64
	Bytes    uint64
}

// Size is the size in bytes of n elements stored in blocks of b. ok is false
// when n is not a whole number of blocks, when b is the zero Block, or when
// the size overflows 64 bits.
func (b Block) Size(n uint64) (size uint64, ok bool) {
	if b.Elements == 0 || n%b.Elements != 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(n/b.Elements, b.Bytes)
	if hi != 0 {
		return 0, false
	}
	return lo, true
}

// An Encoding is a block encoding whose blocks carry their own scales, so
// that a tensor of it is one byte range: GGML's quantized types (as GGUF
// stores them). Encodings whose scales are companion tensors (FP8 with
// weight_scale_inv, GPTQ, NVFP4 in safetensors) are package quant's codecs
// and schemes, not entries here.
type Encoding uint8

// The GGML block types, with ggml's names. Block sizes are ggml's
// (ggml/src/ggml-common.h, whose static_asserts pin them).
const (
	Q4_0 Encoding = iota + 1
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q8_1
	Q2_K
	Q3_K
	Q4_K
	Q5_K
	Q6_K
	Q8_K
	IQ4_NL
	IQ4_XS
	MXFP4
	IQ2_XXS
	IQ2_XS
	IQ3_XXS
	IQ1_S
	IQ3_S
	IQ2_S
	IQ1_M
	TQ1_0
	TQ2_0
	NVFP4 // ggml's block NVFP4 (E4M3 scale per 16 values, in the block)
	Q1_0
	numEncodings
)

var encodingInfo = [numEncodings]struct {
	name  string
	block Block
}{
	Q4_0:   {"Q4_0", Block{32, 2 + 16}},
	Q4_1:   {"Q4_1", Block{32, 2 + 2 + 16}},
	Q5_0:   {"Q5_0", Block{32, 2 + 4 + 16}},
	Q5_1:   {"Q5_1", Block{32, 2 + 2 + 4 + 16}},
	Q8_0:   {"Q8_0", Block{32, 2 + 32}},
	Q8_1:   {"Q8_1", Block{32, 2 + 2 + 32}},
	Q2_K:   {"Q2_K", Block{256, 256/16 + 256/4 + 2 + 2}},
	Q3_K:   {"Q3_K", Block{256, 256/8 + 256/4 + 12 + 2}},
	Q4_K:   {"Q4_K", Block{256, 2 + 2 + 12 + 256/2}},
	Q5_K:   {"Q5_K", Block{256, 2 + 2 + 12 + 256/8 + 256/2}},
	Q6_K:   {"Q6_K", Block{256, 256/2 + 256/4 + 256/16 + 2}},
	Q8_K:   {"Q8_K", Block{256, 4 + 256 + 2*256/16}},
	IQ4_NL: {"IQ4_NL", Block{32, 2 + 16}},
	IQ4_XS: {"IQ4_XS", Block{256, 2 + 2 + 256/64 + 256/2}},
	MXFP4:  {"MXFP4", Block{32, 1 + 16}},
	// The IQ, TQ, NVFP4 and Q1_0 geometries are ggml_type_size and
	// ggml_blck_size of libggml-base (node-llama-cpp 3.22.1's build).
	IQ2_XXS: {"IQ2_XXS", Block{256, 66}},
	IQ2_XS:  {"IQ2_XS", Block{256, 74}},
	IQ3_XXS: {"IQ3_XXS", Block{256, 98}},
	IQ1_S:   {"IQ1_S", Block{256, 50}},
	IQ3_S:   {"IQ3_S", Block{256, 110}},
	IQ2_S:   {"IQ2_S", Block{256, 82}},
	IQ1_M:   {"IQ1_M", Block{256, 56}},
	TQ1_0:   {"TQ1_0", Block{256, 54}},
	TQ2_0:   {"TQ2_0", Block{256, 66}},
	NVFP4:   {"NVFP4", Block{64, 36}},
	Q1_0:    {"Q1_0", Block{128, 18}},
}

// Encodings returns every block encoding the table knows, in declaration
// order.
func Encodings() []Encoding {
	all := make([]Encoding, 0, numEncodings-1)
	for e := Q4_0; e < numEncodings; e++ {
		all = append(all, e)
	}
	return all
}

// ParseEncoding returns the encoding with the given (case-sensitive) name.
func ParseEncoding(name string) (Encoding, bool) {
	for e := Q4_0; e < numEncodings; e++ {
		if encodingInfo[e].name == name {
			return e, true
		}
	}
	return 0, false
}

// Valid reports whether e is one of the declared encodings.
func (e Encoding) Valid() bool { return e > 0 && e < numEncodings }

// Block is e's geometry; an invalid encoding has the zero Block.
func (e Encoding) Block() Block {
	if !e.Valid() {
		return Block{}
	}
	return encodingInfo[e].block
}

func (e Encoding) String() string {
	if e.Valid() {
		return encodingInfo[e].name
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

// MarshalText writes the encoding's name.
func (e Encoding) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (e *Encoding) UnmarshalText(b []byte) error {
	v, ok := ParseEncoding(string(b))
	if !ok {
		return errors.New("unknown encoding " + strconv.Quote(string(b)))
	}
	*e = v
	return nil
}
