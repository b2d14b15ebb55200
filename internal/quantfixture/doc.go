// Package quantfixture writes quantized exports of internal/fixture's models
// for tests and benchmarks: each Linear weight quantized as an upstream
// quantizer does it (FP8 block-wise as transformers' finegrained_fp8, int4
// GPTQ packed as AutoGPTQ packs it), the other tensors through a transform of
// the caller's. Exports are written a tensor at a time, so a full-size model
// never sits in memory. It is test support: no production package imports
// it.
package quantfixture
