// Package verify holds every judgement ckptcheck makes about checkpoints:
// format validation with index and config consistency (Validate), the
// structural diff of a published checkpoint against an exported one (Diff,
// which returns a Comparison), the comparison of their values
// (Comparison.CompareValues, through the value engine in
// verify/internal/values, which reads bytes and returns numbers), and the
// files beside the weights (CompareFiles: config.json field by field,
// tokenizer, chat template, generation config). Manifests and file hashes
// are package manifest's, which yields these Findings. Checks are functions
// that return Findings; a Report gathers them with the inputs and decides
// the verdict. Diff and Validate judge what checkpoint.Open read (headers,
// index, config); CompareValues and CompareFiles read more bytes through
// the checkpoints' files, never writing. Rendering a report is package
// report's; verify only encodes the JSON form (Report.WriteJSON) and reads
// it back (ReadReport). A Baseline moves the findings a team accepted to
// the report's Suppressed list.
//
// Work that reads data can be shared out over machines (package
// partition): ValueOptions.Partition compares one partition's share of the
// logical tensors (ValueWork), NewValuesReport makes its report with a
// Fingerprint of everything that decides the result, and Merge puts the
// partition reports back together into the report of a single run.
//
// A diff also says what a key-by-key comparison cannot: a side that is a
// PEFT adapter rather than a model (lora_adapter), quantized tensors that
// are not compared yet (quantized_unsupported), each said once instead of
// as thousands of missing keys, and an export that matched only through a
// non-identity adapter, which transformers will not load as it is
// (needs_adapter).
//
// Values are read through the adapters' layouts: a logical tensor stored
// transposed is read in bands of logical rows, each a tile of the stored
// matrix read at once and transposed in memory.
//
// Finding codes are stable and documented in Codes.
package verify
