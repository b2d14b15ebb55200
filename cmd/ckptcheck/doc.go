// Command ckptcheck verifies Hugging Face safetensors checkpoints.
//
// Usage:
//
//	ckptcheck validate PATH...        strict format, index and config checks
//	ckptcheck inspect PATH            tensors, dtypes, shapes, parameter counts
//	ckptcheck codes                   every finding code and what it means
//
// Exit status: 0 when no finding is at or above --fail-on (default error),
// 1 when one is, 2 when ckptcheck could not do its job.
package main
