// gen writes reference vectors for package quant's GGML codecs from ggml's
// own library: for each type, seeded float inputs quantized by
// ggml_quantize_chunk, and seeded random block bytes, each dequantized by
// ggml's dequantize_row_<type>. See README.md for how to run it.
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef size_t (*quantize_chunk_t)(int type, const float *src, void *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix);
typedef void (*dequantize_t)(const void *x, float *y, int64_t k);
typedef size_t (*type_size_t)(int type);
typedef int64_t (*blck_size_t)(int type);

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void) { // xorshift64*
	rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}
static float uniform(void) { return (next() >> 8) / 16777216.0f * 2 - 1; } // [-1, 1)

struct kind { const char *name; int type; int64_t rows, cols; };

static void write(const char *path, int64_t rows, int64_t cols, const void *blocks, size_t nbytes, const float *want) {
	FILE *f = fopen(path, "wb");
	if (!f) { perror(path); exit(1); }
	uint32_t hdr[2] = {(uint32_t)rows, (uint32_t)cols};
	fwrite(hdr, 4, 2, f);
	fwrite(blocks, 1, nbytes, f);
	fwrite(want, 4, rows * cols, f);
	fclose(f);
}

int main(int argc, char **argv) {
	if (argc != 2) { fprintf(stderr, "usage: gen path/to/libggml-base.so\n"); return 2; }
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	quantize_chunk_t quantize = (quantize_chunk_t)dlsym(h, "ggml_quantize_chunk");
	type_size_t type_size = (type_size_t)dlsym(h, "ggml_type_size");
	blck_size_t blck_size = (blck_size_t)dlsym(h, "ggml_blck_size");
	if (!quantize || !type_size || !blck_size) { fprintf(stderr, "missing ggml symbols\n"); return 1; }
	struct kind kinds[] = {
		{"q4_0", 2, 3, 96}, {"q4_1", 3, 3, 96}, {"q5_0", 6, 3, 96}, {"q5_1", 7, 3, 96}, {"q8_0", 8, 3, 96},
		{"q2_K", 10, 2, 512}, {"q3_K", 11, 2, 512}, {"q4_K", 12, 2, 512}, {"q5_K", 13, 2, 512}, {"q6_K", 14, 2, 512},
		{"mxfp4", 39, 3, 96},
	};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct kind *q = &kinds[k];
		char sym[64];
		snprintf(sym, sizeof sym, "dequantize_row_%s", q->name);
		dequantize_t dequantize = (dequantize_t)dlsym(h, sym);
		if (!dequantize) { fprintf(stderr, "missing %s\n", sym); return 1; }
		int64_t n = q->rows * q->cols;
		size_t nbytes = n / blck_size(q->type) * type_size(q->type);
		float *src = malloc(n * 4), *want = malloc(n * 4);
		uint8_t *blocks = malloc(nbytes);
		// Quantized: rows of different magnitudes, a few outliers, an all-zero block.
		for (int64_t i = 0; i < n; i++) {
			float scale = (i / q->cols == 0) ? 0.02f : (i / q->cols == 1 ? 1.5f : 300.0f);
			src[i] = uniform() * scale;
			if (next() % 97 == 0) src[i] *= 8;
		}
		for (int64_t i = 0; i < blck_size(q->type); i++) src[i] = 0;
		if (quantize(q->type, src, blocks, 0, q->rows, q->cols, NULL) != nbytes) { fprintf(stderr, "%s: quantize size\n", q->name); return 1; }
		dequantize(blocks, want, n);
		char path[128];
		snprintf(path, sizeof path, "%s_quantized.bin", q->name);
		write(path, q->rows, q->cols, blocks, nbytes, want);
		// Random bytes: every bit pattern of the quants and scales.
		for (size_t i = 0; i < nbytes; i++) blocks[i] = (uint8_t)next();
		dequantize(blocks, want, n);
		snprintf(path, sizeof path, "%s_random.bin", q->name);
		write(path, q->rows, q->cols, blocks, nbytes, want);
		free(src); free(want); free(blocks);
	}
	return 0;
}
