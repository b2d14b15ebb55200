package quant

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A BNBQuantState is what bitsandbytes writes into a 4-bit weight's
// X.weight.quant_state.bitsandbytes__nf4 (or __fp4) tensor: the U8 bytes of
// the JSON of QuantState.as_dict(packed=True)'s non-tensor items
// (bitsandbytes-foundation/bitsandbytes bitsandbytes/functional.py
// QuantState.as_dict and from_dict, bitsandbytes/utils.py
// pack_dict_to_tensor, at 95f9af309d4d5793847169c39288dcd3fcbdf564):
// {"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape":
// [out, in], "nested_blocksize": 256, "nested_dtype": "float32",
// "nested_offset": 0.03}.
type BNBQuantState struct {
	Config BNB4Config
	Shape  []uint64
}

// maxStateDims bounds a quant state's shape.
const maxStateDims = 8

// ParseBNBQuantState reads a quant state's JSON (at most MaxMetaBytes),
// strictly: unknown keys are skipped, but every known one must have its
// type, and the shape, the block sizes and the dtypes must be usable.
func ParseBNBQuantState(b []byte) (BNBQuantState, error) {
	var q BNBQuantState
	if len(b) > MaxMetaBytes {
		return q, fmt.Errorf("bitsandbytes quant_state: %d bytes, more than %d", len(b), MaxMetaBytes)
	}
	if !strictjson.Valid(b) {
		return q, fmt.Errorf("bitsandbytes quant_state: not UTF-8")
	}
	d := strictjson.NewDecoder(b, 0)
	var quantType, dtype, nestedDType string
	var haveShape, haveBlock, haveOffset bool
	err := d.Members(func(key string) error {
		var err error
		switch key {
		case "quant_type":
			quantType, err = d.Str()
		case "dtype":
			dtype, err = d.Str()
		case "nested_dtype":
			nestedDType, err = d.Str()
			q.Config.Nested = true
		case "blocksize":
			q.Config.Blocksize, err = d.Uint()
			haveBlock = true
		case "nested_blocksize":
			q.Config.NestedBlocksize, err = d.Uint()
			q.Config.Nested = true
		case "nested_offset":
			var s string
			if s, err = d.Number(); err == nil {
				var f float64
				if f, err = strconv.ParseFloat(s, 64); err == nil {
					q.Config.NestedOffset = float32(f) // torch.tensor(float(...)): float32
					if math.IsInf(float64(q.Config.NestedOffset), 0) {
						err = d.Fail("nested_offset %s overflows float32", s)
					}
				}
			}
			q.Config.Nested, haveOffset = true, true
		case "shape":
			haveShape = true
			q.Shape = q.Shape[:0]
			err = d.Elements(func(n int) error {
				if n >= maxStateDims {
					return d.Fail("a shape of more than %d dimensions", maxStateDims)
				}
				v, err := d.Uint()
				q.Shape = append(q.Shape, v)
				return err
			})
		default:
			err = d.Skip()
		}
		return err
	})
	if err == nil && !d.End() {
		err = d.Fail("data after the quant state")
	}
	if err != nil {
		return q, fmt.Errorf("bitsandbytes quant_state: %w", err)
	}
	switch quantType {
	case "nf4":
	case "fp4":
		q.Config.FP4 = true
	default:
		return q, fmt.Errorf("bitsandbytes quant_state: quant_type %q is not nf4 or fp4", quantType)
	}
	if q.Config.DType = torchFloat(dtype); q.Config.DType == 0 {
		return q, fmt.Errorf("bitsandbytes quant_state: dtype %q is not float32, bfloat16 or float16", dtype)
	}
	if !haveBlock || !haveShape {
		return q, fmt.Errorf("bitsandbytes quant_state: no blocksize or shape")
	}
	if q.Config.Nested && (!haveOffset || q.Config.NestedBlocksize == 0 || torchFloat(nestedDType) != tensorfile.F32) {
		return q, fmt.Errorf("bitsandbytes quant_state: double quantization needs nested_offset, nested_blocksize and a float32 nested_dtype")
	}
	if _, err := NewBNB4(q.Config); err != nil {
		return q, err
	}
	return q, nil
}

// torchFloat is the dtype of a torch float's name as str(dtype).strip("torch.")
// writes it, 0 for others.
func torchFloat(name string) tensorfile.DType {
	switch name {
	case "float32":
		return tensorfile.F32
	case "bfloat16":
		return tensorfile.BF16
	case "float16":
		return tensorfile.F16
	}
	return 0
}

// Dims folds the state's shape to the [rows, cols] the codec decodes (the
// last dimension a row), or fails when it overflows.
func (q BNBQuantState) Dims() (Dims, error) {
	d := Dims{Rows: 1, Cols: 1}
	if n := len(q.Shape); n > 0 {
		d.Cols = q.Shape[n-1]
		for _, s := range q.Shape[:n-1] {
			r, ok := mul(d.Rows, s)
			if !ok {
				return d, fmt.Errorf("bitsandbytes quant_state: shape %v overflows", q.Shape)
			}
			d.Rows = r
		}
	}
	if _, ok := d.Values(); !ok {
		return d, fmt.Errorf("bitsandbytes quant_state: shape %v overflows", q.Shape)
	}
	return d, nil
}
