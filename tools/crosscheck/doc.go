// Package crosscheck holds no code: its tests and benchmarks hold
// ckptcheck's safetensors reader against an independent implementation,
// nlpodyssey/safetensors (a Go port of the reference), on the shared real
// files and on files from ckptcheck's writer. That implementation is a test
// dependency only, so it lives in the tools module, never in the main
// go.mod.
package crosscheck
