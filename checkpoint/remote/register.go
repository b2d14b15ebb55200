package remote

import "github.com/ckptcheck/ckptcheck/checkpoint"

// Linking this package makes checkpoint.Open read https://, http:// and
// hf:// paths, as importing image/png makes image.Decode read PNG.
func init() {
	checkpoint.RegisterScheme("https", openHTTP)
	checkpoint.RegisterScheme("http", openHTTP)
	checkpoint.RegisterScheme("hf", openHFPath)
}
