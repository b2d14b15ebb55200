// Package quanttest is the conformance suite every quant.Codec passes, as
// every restic backend passes its backend test suite: a codec's own test
// calls TestCodec with vectors computed independently of the codec (from
// the encoding's specification or the quantizer's published code).
package quanttest
