// Package adapter maps the tensor names and layouts of one checkpoint onto
// Hugging Face naming, so that checkpoints written by different frameworks
// can be compared key for key and value for value.
//
// An Adapter turns a checkpoint's physical tensors into a logical View: each
// logical tensor has an HF name, a dtype, a shape, and the byte segments of
// physical tensors that hold its elements in row-major order. A rename is one
// whole segment; an expert sliced out of a stacked tensor is one contiguous
// segment; a row permutation or a per-group split is several. Anything that
// reads segments works through every adapter. Adapters never read files.
//
// Adapters are written in a small rule language (see Parse); the presets are
// rule files embedded in the binary (see Presets). A Chain applies several in
// order ("torchtitan-hf,compile"), and Choose picks, among Candidates, the
// chain per side whose names best match the other side's.
package adapter
