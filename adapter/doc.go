// Package adapter maps the tensor names of one checkpoint onto Hugging Face
// naming, so that checkpoints written by different frameworks can be
// compared key for key.
//
// An Adapter turns a checkpoint's physical tensors into a logical View: each
// logical tensor has an HF name, a dtype, a shape, and the byte segments of
// physical tensors that hold its elements in row-major order. A rename is
// one whole segment; later layouts (an expert sliced out of a stacked
// tensor, a row permutation) are more segments, so anything that reads
// segments works for every adapter. Adapters never read files.
//
// Presets (see Presets) chain: "torchtitan-hf,compile" strips torch.compile's
// wrapper, then torchtitan's leading "model.". Choose picks, per side, the
// chain that best matches the other side's names.
package adapter
