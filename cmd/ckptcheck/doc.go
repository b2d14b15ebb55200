// Command ckptcheck verifies Hugging Face safetensors checkpoints.
//
// Usage:
//
//	ckptcheck diff PUBLISHED EXPORTED  is the export still the published model? keys, shapes,
//	                                   dtypes, tied embeddings, the files beside the weights;
//	                                   with --values, the values (--partition i/n: a share)
//	ckptcheck validate PATH...         strict format, index and config checks (--hashes,
//	                                   --manifest FILE: every byte)
//	ckptcheck inspect PATH             tensors, dtypes, shapes, parameter counts
//	ckptcheck manifest PATH            every file's SHA-256, every tensor's xxh3, as JSON
//	ckptcheck merge REPORT.json...     the reports (or manifests) of partitioned runs, as one
//	ckptcheck adapters [NAME]          the adapter presets, or one preset's rules
//	ckptcheck codes                    every finding code and what it means
//
// A PATH is a .safetensors file, a *.safetensors.index.json, a directory, a
// Hugging Face repo id in the local hub cache, or a remote checkpoint:
// https://, hf://org/name[@rev], s3://bucket/prefix. Reports are text,
// json, github, markdown, junit, sarif or html (--format). Exit status: 0
// when no finding is at or above --fail-on (default error), 1 when one is,
// 2 when ckptcheck could not do its job. The README documents every flag
// and finding code.
package main
