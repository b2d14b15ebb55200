// Package quant decodes tensor encodings to numbers: the plain dtypes
// (DecodeFloat64, DecodeInt, F16ToFloat32: exact, for the value engine's
// fused kernels) and quantized encodings, through two interfaces.
//
// A Codec is one encoding of a weight, stored in one or more parts (the
// data, and the scales, zero points, global scales its blocks need). For a
// weight of logical Dims [rows, cols] it says its Tile (the row alignment a
// read plan must respect), the byte size of each part (Sizes), which byte
// spans of which part rows [r0, r1) need (Spans, strided when a part's
// layout is transposed against the rows), and how those bytes decode to
// float32 (Decode). A plan can therefore read only the bytes of the rows it
// works on, through any io.ReaderAt, and a codec never reads a file.
// Spans come out as a few strided runs however large the weight, and no
// codec allocates by the numbers in Dims: a hostile header cannot make one
// allocate or loop by its shape.
//
// A Scheme is how a quantization method (a quantization_config's
// quant_method) lays a weight out over named tensors: which tensors are
// quantized weights, which companions (weight_scale_inv, qzeros, …) belong
// to each, and the Codec that decodes them. Binding happens in one place,
// the adapter's view builder, which calls the registered Scheme (see
// RegisterScheme); judging a missing or misshapen companion is package
// verify's. One file a scheme (scheme_*.go): fp8, mxfp4,
// compressed-tensors, bitsandbytes, gptq, awq, mlx. Each binds the codec
// its headers and quantization_config (read with the bounded JSON reader)
// determine, with the weight's logical (dequantized) shape, and keeps the
// Unsupported codec, which names the scheme and its parts and decodes
// nothing, for the combinations no codec decodes. Companions a codec does
// not decode but the weight owns (input_scale, quant_map, weight_shape,
// quant_state) are carried parts: sized, spanned, not decoded. Where the
// layout lives in the data (bitsandbytes' quant state, compressed-tensors'
// weight_shape) the codec is a Resolver: the caller reads that one small
// part and resolves the codec and the shape.
//
// The codecs, one a file, each citing the upstream code its values follow
// bit for bit: BlockFP8 (DeepSeek-V3 / finegrained_fp8), ChannelFP8
// (compressed-tensors float-quantized), ScaledFP8, PackQuantized
// (compressed-tensors pack-quantized), GPTQ, AWQ (GEMM), MLXAffine, MXFP4
// (gpt-oss), NVFP4 (ModelOpt and compressed-tensors), BNB4 (bitsandbytes
// NF4/FP4, double quantization) and Int8Rowwise (LLM.int8). Rounding
// follows upstream: products torch computes in float32 and stores in BF16
// or F16 are rounded to nearest even once; where upstream rounds between
// two operations (mlx's multiply then add, bitsandbytes' nested absmax then
// offset) an explicit float32 conversion keeps Go from fusing them.
//
// Every codec passes the shared conformance suite in package quanttest, as
// every restic backend passes its test suite. ScaledFP8 is the reference
// codec; Plain wraps every decodable plain dtype as a codec, which the suite
// checks too. The value engine keeps decoding plain dtypes with its fused
// kernels; Plain exists so that a plain side of a lossy comparison has a
// codec like the other side.
//
// Formats and codecs never import each other: tensorfile's dtype table and
// block geometry are what they share.
package quant
