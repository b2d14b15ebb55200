// Package adapter maps the tensor names and layouts of one checkpoint onto
// Hugging Face naming, so that checkpoints written by different frameworks
// can be compared key for key and value for value.
//
// An Adapter turns a checkpoint's physical tensors into a logical View: each
// logical tensor has an HF name, a dtype, a shape, and the byte segments of
// physical tensors that hold its elements in row-major order. A rename is one
// whole segment; an expert sliced out of a stacked tensor is one contiguous
// segment; a row permutation or a per-group split is several; a tensor
// stored transposed (Tensor.Transposed) keeps the segments of the stored
// matrix and is read as their transpose; a tensor whose rows alternate
// between two tensors (Tensor.Interleave) keeps both whole and is read a
// unit of each in turn; a segment stored transposed (Segment.Transposed)
// is a tile of whole rows read as its transpose between plain rows.
// Anything that reads segments works through every adapter. Adapters never
// read files.
//
// # Adapters are data
//
// Adapters are written in a small rule language (see Parse); the presets are
// the rule files of the presets directory, embedded in the binary (see
// Presets). A Chain applies several in order ("torchtitan-hf,compile");
// within one file, "then" lines do the same for stages of rules, so that
// one preset composes layouts (a fused QKV split per group, then
// permuted). A preset says what it was checked against: its covers lines
// name framework versions, tags or commit ranges (ckptcheck adapters
// shows them). Its absent lines name the other side's tensors it holds in
// no form it reads (View.Absent): a comparison lists them once a line
// instead of as missing keys.
//
// A file also says how "auto" uses it, so a new naming scheme is a new file
// and no Go: "auto wrapper" for a scheme that only wraps names (ddp,
// compile, fsdp: tried whenever it changes a name, and combined with the
// other wrappers that do), "auto structural" for a scheme of its own (the
// default: tried after the wrappers, when it maps a name and its family
// fits the published model_type), "auto never" for one used only by name
// (hf, the identity). "order N" places it among its kind. Candidates lists
// the chains auto tries on one side, and Choose picks, per side, the chain
// whose names best match the other side's, applying each chain once.
//
// # Globs
//
// The project has one glob dialect, Glob: "*" matches any run of
// characters, dots included, "?" one character, and everything else
// itself. Adapter patterns that hold "*" or "?" are Globs; so are policy
// matches, inspect --filter and --ignore.
//
// # Work bounds
//
// A header is input like any other, and a shape is a number in it: a few
// kilobytes can claim stacks of 65536 experts that hold no bytes. The work
// of applying a chain is bounded by the number of physical tensors, never by
// a number in their shapes: each logical tensor and each segment counts
// against a bound proportional to the physical tensors, and the caller may
// cap the logical tensors further (Chain.ApplyLimit, Side.MaxTensors). A
// chain that reaches a bound stops there and says so (View.Truncated). Rule
// expressions over config.json values are checked int64 arithmetic.
package adapter
