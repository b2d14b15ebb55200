package verify

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

// InspectDCP lists a DCP step's model tensors, by their global shapes,
// with the file of their first chunk. The trainer's state (optimizer,
// lr_scheduler, dataloader, train_state) is not the model's: it is counted
// in Totals.Metadata under "dcp.<part>", never listed as tensors.
func InspectDCP(step *DCPStep, filter *adapter.Glob, tree bool) *Inspection {
	ins := &Inspection{Tensors: []TensorRow{}, Totals: Totals{ByDType: map[string]*DTypeTotals{}, Files: len(step.Files)}}
	if filter != nil {
		ins.Filter = filter.String()
	}
	if step.Metadata == nil {
		return ins
	}
	others := map[torchsave.DCPPart]int{}
	for _, t := range step.Metadata.Tensors {
		if t.Part != torchsave.DCPModel {
			others[t.Part]++
			continue
		}
		if filter != nil && !filter.Match(t.FQN) {
			continue
		}
		n, _ := t.NumElements()
		row := TensorRow{Name: t.FQN, DType: t.DType, Shape: t.Shape, Parameters: n, Bytes: t.DType.Bytes(n)}
		if len(t.Chunks) > 0 {
			row.File = t.Chunks[0].Item.RelativePath
		}
		ins.Tensors = append(ins.Tensors, row)
		ins.add(t.DType.String(), row.Parameters, row.Bytes)
	}
	for _, b := range step.Metadata.Bytes {
		others[b.Part]++
	}
	for part, n := range others {
		if ins.Totals.Metadata == nil {
			ins.Totals.Metadata = map[string]string{}
		}
		noun := "entries"
		if n == 1 {
			noun = "entry"
		}
		ins.Totals.Metadata["dcp."+part.String()] = fmt.Sprintf("%d %s, not weights", n, noun)
	}
	ins.finish(tree)
	return ins
}
