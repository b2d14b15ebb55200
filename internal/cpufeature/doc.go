// Package cpufeature reports the x86-64 vector extensions the assembly of
// ckptcheck's packages may use (quant's decoders, the value engine's
// kernels, internal/xxh3): the CPU is asked once, on the first call, never
// at package init, since each CPUID is a VM exit and most runs (`--version`,
// a header diff) use none of them. An extension counts only where the
// operating system saves its registers (XCR0). Other architectures, and
// builds with -tags purego, report none.
package cpufeature
