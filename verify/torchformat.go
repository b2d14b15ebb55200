package verify

import (
	"errors"
	"fmt"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

// TorchCode is the code of a torch file's error kind: its snake_case name
// (unsafe_pickle, torch_bad_archive, …).
func TorchCode(k torchsave.ErrorKind) Code { return Code(k.String()) }

// headerTensors lists the tensors of a shard whose header parsed, in any
// format, as safetensors tensors: a safetensors file's own; for another
// format each tensor's absolute byte range in the file (Shard.Data) as its
// DataOffsets, or, for a tensor that cannot be read (see tensorError), the
// range [0, its size) so that sizes and adapters work and nothing reads it.
func headerTensors(s *checkpoint.Shard) []*safetensors.Tensor {
	if h := s.Safetensors(); h != nil {
		return h.Tensors
	}
	if s.Header == nil {
		return nil
	}
	out := make([]*safetensors.Tensor, s.Header.NumTensors())
	for i, ti := range tensorfile.Tensors(s.Header) {
		begin, end := uint64(ti.Offset), uint64(ti.Offset+ti.Size)
		if ti.Offset < 0 {
			n, _ := ti.NumElements()
			begin, end = 0, ti.DType.Bytes(n)
		}
		out[i] = &safetensors.Tensor{TensorInfo: safetensors.TensorInfo{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, DataOffsets: [2]uint64{begin, end}}}
	}
	return out
}

// tensorError says why tensor i of a shard's header cannot be read (a
// torch view that is not contiguous), or nil.
func tensorError(s *checkpoint.Shard, i int) error {
	if te, ok := s.Header.(interface{ TensorError(int) error }); ok {
		return te.TensorError(i)
	}
	return nil
}

// torchFindings turns a torch file's format error, and the errors of the
// tensors it cannot read, into findings.
func torchFindings(s *checkpoint.Shard) []Finding {
	var out []Finding
	var fe *torchsave.FormatError
	if errors.As(s.Err, &fe) {
		out = append(out, torchFinding(s.Path, fe))
	}
	if s.Header == nil {
		return out
	}
	for i := range s.Header.NumTensors() {
		if errors.As(tensorError(s, i), &fe) {
			out = append(out, torchFinding(s.Path, fe))
		}
	}
	return out
}

func torchFinding(path string, fe *torchsave.FormatError) Finding {
	f := Finding{Code: TorchCode(fe.Kind), Severity: Error, File: path, Key: fe.Tensor, Message: fe.Msg}
	if fe.Entry != "" {
		f.Message = fe.Entry + ": " + fe.Msg
	}
	switch fe.Kind {
	case torchsave.UnsafePickle:
		f.Message = fmt.Sprintf("%s: %s; the file was not read further", path, f.Message)
	case torchsave.NonContiguous, torchsave.UnsupportedTensor, torchsave.DCPChunked:
		f.Severity = Warning // a valid file whose tensor ckptcheck does not read
	}
	return f
}
