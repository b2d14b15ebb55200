package verify

import (
	"errors"
	"fmt"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// ggufFinding is the finding of a GGUF shard's format error: its gguf_*
// code, the tensor it is about, the metadata key in the message.
func ggufFinding(s *checkpoint.Shard) (Finding, bool) {
	var fe *gguf.FormatError
	if !errors.As(s.Err, &fe) {
		return Finding{}, false
	}
	msg := fe.Msg
	if fe.Key != "" {
		msg = fmt.Sprintf("key %q: %s", fe.Key, msg)
	}
	if fe.Offset >= 0 {
		msg += fmt.Sprintf(" (at byte %d)", fe.Offset)
	}
	return Finding{Code: GGUFFormatCode(fe.Kind), Severity: Error, File: s.Path, Key: fe.Tensor, Message: msg}, true
}

// inspectFile adds the tensors of a shard of a format other than
// safetensors (a GGUF file), through the format-neutral tensorfile.File:
// a block-encoded tensor is counted under its encoding ("Q4_K").
func (ins *Inspection) inspectFile(s *checkpoint.Shard, match func(string) bool) {
	ins.Totals.Files++
	for k, v := range s.File.Meta() {
		if ins.Totals.Metadata == nil {
			ins.Totals.Metadata = map[string]string{}
		}
		ins.Totals.Metadata[k] = v
	}
	for _, t := range tensorfile.Tensors(s.File) {
		if !match(t.Name) {
			continue
		}
		n, _ := t.NumElements()
		row := TensorRow{Name: t.Name, DType: t.DType, Encoding: t.Encoding, Shape: t.Shape, Parameters: n, Bytes: uint64(t.Size), File: s.Name}
		ins.Tensors = append(ins.Tensors, row)
		ins.add(row.Type(), n, row.Bytes)
	}
}

// Type is the row's encoding when it has one, else its dtype.
func (r TensorRow) Type() string {
	if r.Encoding != 0 {
		return r.Encoding.String()
	}
	return r.DType.String()
}
