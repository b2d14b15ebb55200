// Macros the AVX2 decoders share (vector_*_amd64.s).

// BCAST broadcasts the 32-bit constant c into register y.
#define BCAST(c, y) \
	MOVL c, AX \
	MOVD AX, X0 \
	VPBROADCASTD X0, y
