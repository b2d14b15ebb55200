package verify

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
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
