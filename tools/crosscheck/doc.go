// Package crosscheck holds no code: its tests and benchmarks hold
// ckptcheck's safetensors reader against an independent implementation,
// nlpodyssey/safetensors (a Go port of the reference), on the shared real
// files and on files from ckptcheck's writer; and internal/xxh3 against
// zeebo/xxh3, the XXH3-64 the manifests were first written with. Those
// implementations are test dependencies only, so they live in the tools
// module, never in the main go.mod.
package crosscheck
