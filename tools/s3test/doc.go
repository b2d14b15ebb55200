// Package s3test holds no code: its tests run ckptcheck's s3:// source
// (checkpoint/remote/s3, through checkpoint.Open, and the ckptcheck
// command) against the S3 fake of package s3fake, which lives in the tools
// module so that gofakes3 stays out of the main go.mod.
package s3test
