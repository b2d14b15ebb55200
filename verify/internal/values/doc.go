// Package values is ckptcheck's value engine: it compares pairs of logical
// tensors element by element and gives numbers, never judgements.
//
// A Pair is two Operands, each a dtype, a logical shape and the Segments
// (byte ranges of io.ReaderAt's) that hold its elements in row-major order,
// possibly transposed; or a quantized tensor: a quant.Codec and the
// Segments of each of its parts. Run cuts every pair into blocks fixed by
// the shapes alone (the read plan, plan.go; whole tiles of rows for a
// codec), reads them through one read scheduler that coalesces spans, reads
// ahead and bounds the reads and buffers in flight (readsched.go), and
// measures each block with the kernels: an exact check on the bytes where
// the dtypes allow it (equal bytes need no decoding; so for two operands
// of one codec), else fused decode-and-statistics loops (kernels_stats.go,
// the generated kernels_gen.go and the AVX2 kernels_amd64.s). A codec side
// is decoded by its codec into a worker's float32 buffer and measured as
// the F32 tensor it decodes to (codec.go), a codec stored transposed a
// band at a time, transposed in memory (codec_transposed.go), or, where
// its codec decodes ranges of rows, a piece at a time in the cache
// (subchunk.go), the statistics and the steps in one pass where a codec
// loop exists (codec_fused.go, the codec on either side), and the sums per
// column and row a pair asks for from the same pieces (folded.go,
// foldedrows.go, the AVX2 columns_amd64.s); plain dtypes never go through
// a codec. Blocks merge in order into each pair's Stats, so the numbers do
// not depend on scheduling. Findings, codes and report data are the
// caller's (package verify).
package values
