// Package xxh3 is XXH3-64 with seed 0 and the default secret: the hash
// of the manifests' tensors ("xxh3-64 of its bytes (seed 0, hex)"). It is
// written from the reference, Cyan4973/xxHash's xxhash.h (commit
// b2e9dbb05fb7f45ad662e67969e92c48b9b32247), and is bit-exact with it for
// every length: the short paths (0, 1–3, 4–8, 9–16, 17–128, 129–240
// bytes), the long one (stripes of 64 bytes, blocks of 16 stripes, the
// scramble after each block, the last stripe), and the streaming Hasher
// whose 256-byte buffer gives the same sums however the input is split.
//
// Long inputs are accumulated with AVX-512 or AVX2 on amd64 when the CPU
// has them, and by the portable loop otherwise (and on other
// architectures). The CPU is asked only when the first
// long input is hashed, never at package init: a CPUID instruction is a
// VM exit on a virtual machine, and the command line starts on every
// call. It imports nothing of the project, so every layer may use it.
package xxh3
