// Command ckptcheck verifies Hugging Face safetensors checkpoints.
//
// Usage:
//
//	ckptcheck diff PUBLISHED EXPORTED  is the export still the published model? keys, shapes,
//	                                   dtypes, tied embeddings; with --values, the values
//	ckptcheck validate PATH...         strict format, index and config checks
//	ckptcheck inspect PATH             tensors, dtypes, shapes, parameter counts
//	ckptcheck adapters [NAME]          the adapter presets, or one preset's rules
//	ckptcheck codes                    every finding code and what it means
//
// A PATH is a .safetensors file, a *.safetensors.index.json, a directory, or a
// Hugging Face repo id in the local hub cache. Exit status: 0 when no finding
// is at or above --fail-on (default error), 1 when one is, 2 when ckptcheck
// could not do its job. The README documents every flag and finding code.
package main
