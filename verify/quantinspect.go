package verify

import (
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// quantRows is what inspect shows of c's quantized weights: by the name of
// each weight's data tensor, the row of the logical weight (its name, its
// encoding, its dequantized shape and parameters, the bytes of all its
// parts); and the companions, which are part of those rows. It reads
// headers and config.json, and of the data only the small layout tensors
// of weights whose shape is written there (compressed-tensors'
// weight_shape, bitsandbytes' quant_state; see resolveBindings).
func quantRows(c *checkpoint.Checkpoint) (weights map[string]TensorRow, companions map[string]bool) {
	qb, ok := bindCheckpoint(c)
	if !ok || qb.err != nil {
		return nil, nil
	}
	byName := make(map[string]*tensorfile.TensorInfo, len(qb.infos))
	for i := range qb.infos {
		if _, dup := byName[qb.infos[i].Name]; !dup {
			byName[qb.infos[i].Name] = &qb.infos[i]
		}
	}
	weights, companions = map[string]TensorRow{}, map[string]bool{}
	for _, b := range qb.bound.Bindings {
		data := byName[b.Parts[0]]
		if data == nil {
			continue
		}
		shape := b.Shape
		if shape == nil {
			shape = data.Shape // the shape lives in the data (bitsandbytes' quant_state): the stored one
		}
		row := TensorRow{Name: b.Weight, DType: data.DType, Shape: shape, Parameters: numElements(shape), Encoding: b.Codec.String()}
		for _, p := range b.Parts {
			if t := byName[p]; t != nil {
				row.Bytes += t.DType.Bytes(numElements(t.Shape))
				if p != b.Parts[0] {
					companions[p] = true
				}
			}
		}
		weights[b.Parts[0]] = row
	}
	return weights, companions
}
