package main

// The file formats beside safetensors register themselves with package
// tensorfile when linked, as the remote schemes do with checkpoint: the
// binary links them, so that a library user of checkpoint chooses its own.
// torchsave reads torch.save's .bin, .pt and .pth without running them;
// gguf reads llama.cpp's .gguf files.
import (
	_ "github.com/ckptcheck/ckptcheck/gguf"
	_ "github.com/ckptcheck/ckptcheck/torchsave"
)
