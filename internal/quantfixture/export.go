package quantfixture

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A Quantizer stores a Linear weight as the tensors of its scheme.
type Quantizer interface {
	// Layout is the tensors a weight of s is stored as, without data.
	Layout(s fixture.Spec) []safetensors.TensorInfo
	// Quantize is those tensors with their data, in Layout's order.
	Quantize(t fixture.Tensor) []fixture.Tensor
	// Config is the export's quantization_config.
	Config() map[string]any
}

// Linear reports whether a tensor of the model is a Linear weight that the
// quantizers quantize: the projections of attention and MLP (embeddings,
// the head and norms stay as they are, as upstream exports leave them).
func Linear(s fixture.Spec) bool {
	return len(s.Shape) == 2 && strings.HasSuffix(s.Name, "_proj.weight")
}

// WriteExport writes q quantized by z into dir, as model.safetensors and a
// config.json carrying z's quantization_config, a tensor at a time: each
// Linear weight is made in BF16 and quantized, every other tensor is made
// in BF16 and passed through plain (nil keeps it; it must stay BF16).
func WriteExport(dir string, q fixture.Qwen3, z Quantizer, plain func(fixture.Tensor) fixture.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	specs := q.Specs()
	var infos []safetensors.TensorInfo
	for _, s := range specs {
		if Linear(s) {
			infos = append(infos, z.Layout(s)...)
		} else {
			infos = append(infos, safetensors.TensorInfo{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape})
		}
	}
	hdr, ordered, err := safetensors.EncodeHeader(infos, map[string]string{"format": "pt"})
	if err != nil {
		return err
	}
	at := make(map[string]safetensors.TensorInfo, len(ordered))
	for _, t := range ordered {
		at[t.Name] = t
	}
	path := filepath.Join(dir, "model.safetensors")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(hdr); err != nil {
		return err
	}
	// The header orders tensors by dtype, so a weight's parts lie apart:
	// each is written at its offset, a source tensor at a time.
	for _, s := range specs {
		t := q.Tensor(s, safetensors.BF16)
		out := []fixture.Tensor{t}
		switch {
		case Linear(s):
			out = z.Quantize(t)
		case plain != nil:
			out[0] = plain(t)
		}
		for _, o := range out {
			info := at[o.Name]
			if o.DType != info.DType || uint64(len(o.Data)) != info.Size() {
				return fmt.Errorf("%s: tensor %q: %s, %d bytes; the layout says %s, %d", path, o.Name, o.DType, len(o.Data), info.DType, info.Size())
			}
			if _, err := f.WriteAt(o.Data, int64(len(hdr))+int64(info.DataOffsets[0])); err != nil {
				return err
			}
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	config := q.Config("bfloat16")
	config["quantization_config"] = z.Config()
	return fixture.WriteJSON(filepath.Join(dir, "config.json"), config)
}

// floats is a BF16 or F32 tensor's values.
func floats(t fixture.Tensor) []float32 {
	switch t.DType {
	case safetensors.BF16:
		v := make([]float32, len(t.Data)/2)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
		return v
	case safetensors.F32:
		v := make([]float32, len(t.Data)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		return v
	}
	panic(fmt.Sprintf("quantfixture: tensor %q is %s, not BF16 or F32", t.Name, t.DType))
}
