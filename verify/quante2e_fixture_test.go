package verify

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Tensors that hold a layout in their data, as the exporters write them.

// i64Tensor is an I64 tensor of the values: compressed-tensors'
// weight_shape (torch.tensor(shape) saved as int64).
func i64Tensor(name string, vals ...int64) fixture.Tensor {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return fixture.Tensor{Name: name, DType: safetensors.I64, Shape: []uint64{uint64(len(vals))}, Data: b}
}

// jsonTensor is a U8 tensor of the JSON's bytes: bitsandbytes'
// pack_dict_to_tensor (bitsandbytes/utils.py at
// 95f9af309d4d5793847169c39288dcd3fcbdf564: json.dumps, encoded as UTF-8,
// torch.tensor(list(bytes), dtype=torch.uint8)).
func jsonTensor(name, js string) fixture.Tensor {
	return fixture.Tensor{Name: name, DType: safetensors.U8, Shape: []uint64{uint64(len(js))}, Data: []byte(js)}
}

// gIdx is GPTQ's g_idx of in columns in groups of group without act-order:
// column c in group c/group.
func gIdx(name string, in, group int32) fixture.Tensor {
	idx := make([]int32, in)
	for c := range idx {
		idx[c] = int32(c) / group
	}
	return fixture.Tensor{Name: name, DType: safetensors.I32, Shape: []uint64{uint64(in)}, Data: le32(idx)}
}

// sourceValues are a BF16 (or other float) tensor's values.
func sourceValues(t fixture.Tensor) []float64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	vals := make([]float64, n)
	quant.DecodeFloat64(t.DType, t.Data, vals)
	return vals
}

// roundBF16 is x rounded to BF16, to nearest even, as torch's casts do.
func roundBF16(x float32) float32 {
	b := math.Float32bits(x)
	b += 0x7FFF + (b>>16)&1
	return math.Float32frombits(b &^ 0xFFFF)
}

// le32 is words as little-endian bytes.
func le32[T uint32 | int32](ws []T) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, uint32(w))
	}
	return b
}

// f32Tensor is an F32 tensor of vals.
func f32Tensor(name string, vals []float32, shape ...uint64) fixture.Tensor {
	return fixture.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: fixture.Encode(vals, safetensors.F32)}
}

// e2m1Grid are the non-negative E2M1 values by code.
var e2m1Grid = [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// toE2M1 is x's E2M1 code, rounded to nearest, ties to an even code,
// saturating at ±6, the sign in bit 3 (compressed-tensors' cast_to_fp4 and
// ModelOpt's e2m1 cast; a negative value that rounds to zero is −0).
func toE2M1(x float64) byte {
	a := min(math.Abs(x), 6)
	best := 0
	for c := 1; c < 8; c++ {
		d, bd := math.Abs(e2m1Grid[c]-a), math.Abs(e2m1Grid[best]-a)
		if d < bd || (d == bd && c%2 == 0) {
			best = c
		}
	}
	if math.Signbit(x) {
		best |= 8
	}
	return byte(best)
}

// blockAmax is the largest |x| of each block of n values of each row.
func blockAmax(vals []float64, cols, n uint64) []float64 {
	per := (cols + n - 1) / n
	out := make([]float64, uint64(len(vals))/cols*per)
	for i, v := range vals {
		r, c := uint64(i)/cols, uint64(i)%cols
		k := r*per + c/n
		out[k] = max(out[k], math.Abs(v))
	}
	return out
}

// stem is a weight's module with its trailing dot.
func stem(weight string) string { return strings.TrimSuffix(weight, "weight") }

// An e2eCase is an export of src's weights and what diff says of it: its
// structural findings (notable) and its value findings.
type e2eCase struct {
	name            string
	tensors         []fixture.Tensor
	config          map[string]any
	structure, vals []string
}

// checkE2E diffs each case's export against src published as is, with
// values, and checks the findings. A case named "…, sharded" is written
// as three shards and an index.
func checkE2E(t *testing.T, src []fixture.Tensor, cases []e2eCase) {
	t.Helper()
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp := export(t, c.tensors, c.config)
			if strings.HasSuffix(c.name, ", sharded") { // three shards and an index
				exp = filepath.Join(t.TempDir(), "sharded")
				if err := fixture.WriteSharded(exp, c.tensors, 3, c.config); err != nil {
					t.Fatal(err)
				}
			}
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); !slices.Equal(got, c.structure) {
				t.Fatalf("structure %q, want %q", got, c.structure)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.vals) {
				t.Errorf("values %q, want %q", got, c.vals)
			}
		})
	}
}

// checkValidated validates an export and checks its quantized_* findings,
// and that inspect shows qProj as one logical weight of its source's shape
// and the encoding.
func checkValidated(t *testing.T, tensors []fixture.Tensor, cfg map[string]any, shape []uint64, encoding string, want []string) {
	t.Helper()
	dir := export(t, tensors, cfg)
	fs, err := Validate(context.Background(), openCheckpoint(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := quantFindings(fs); !slices.Equal(got, want) {
		t.Errorf("validate: %q, want %q (%v)", got, want, fs)
	}
	ins := Inspect(openCheckpoint(t, dir), nil, false)
	i := slices.IndexFunc(ins.Tensors, func(r TensorRow) bool { return r.Name == qProj })
	if i < 0 || !slices.Equal(ins.Tensors[i].Shape, shape) || ins.Tensors[i].Encoding != encoding || ins.Tensors[i].Parameters != numElements(shape) {
		t.Errorf("inspect: %+v, want %s %v", ins.Tensors, encoding, shape)
	}
}

// without is tensors less the named ones.
func without(tensors []fixture.Tensor, names ...string) []fixture.Tensor {
	return slices.DeleteFunc(slices.Clone(tensors), func(x fixture.Tensor) bool { return slices.Contains(names, x.Name) })
}
