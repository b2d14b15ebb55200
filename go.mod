module github.com/ckptcheck/ckptcheck

go 1.26.8

require github.com/urfave/cli/v3 v3.14.0
