module github.com/ckptcheck/ckptcheck

go 1.26.8

require (
	github.com/nlpodyssey/safetensors v0.0.0-20250209183917-bfb01cc25f7c
	github.com/urfave/cli/v3 v3.14.0
)
