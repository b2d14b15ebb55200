//go:build !amd64

package xxh3

func accumulate(acc *[8]uint64, data, secret []byte, stripes int) {
	accumulateScalar(acc, data, secret, stripes)
}

func accumulateBlocks(acc *[8]uint64, data []byte) { accumulateBlocksScalar(acc, data) }
