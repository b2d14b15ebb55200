package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	// The remote sources register their URL schemes with package
	// checkpoint when linked: https://, http:// and hf://, and s3://
	// (the AWS SDK, which only the binary links, not the library).
	_ "github.com/ckptcheck/ckptcheck/checkpoint/remote"
	_ "github.com/ckptcheck/ckptcheck/checkpoint/remote/s3"
)

// remoteReadAhead is how many value blocks are read at once when a side is
// remote: each read may wait a round trip, so more stay in flight (2 × 16
// blocks of 512 KiB to 1 MiB). Remote files also read ahead themselves,
// in 8 MiB chunks, when the reads are sequential.
const remoteReadAhead = 16

// remoteFlags are the flags for https://, hf:// and s3:// paths.
func remoteFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "revision", Usage: "for hf:// paths without @REV: the `REV`ision to read (branch, tag, commit, refs/pr/N); default main"},
		&cli.DurationFlag{Name: "timeout", Value: checkpoint.DefaultTimeout,
			Usage: "for remote paths: the longest one request may take, answer, body and retries together (`DURATION`, e.g. 30s)",
			Validator: func(d time.Duration) error {
				if d <= 0 {
					return usageError("--timeout must be more than 0")
				}
				return nil
			}},
		&cli.BoolFlag{Name: "no-sign-request", Usage: "read s3:// paths without credentials (public buckets), as the AWS CLI's flag"},
	}
}

// openOptions are the checkpoint options the command line and the
// environment give (the Hub's token, endpoint and offline mode).
func openOptions(cmd *cli.Command) checkpoint.Options {
	return checkpoint.Options{Variant: cmd.String("variant"), Remote: checkpoint.RemoteOptions{
		Revision:      cmd.String("revision"),
		Timeout:       cmd.Duration("timeout"),
		NoSignRequest: cmd.Bool("no-sign-request"),
		Token:         hubToken(),
		Endpoint:      os.Getenv("HF_ENDPOINT"),
		Offline:       hubOffline(),
	}}
}
