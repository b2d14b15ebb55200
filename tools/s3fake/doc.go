// Package s3fake is an S3 server on loopback for tests (gofakes3 over a
// folder, objects served in place) and the environment that points the AWS
// SDK at it. It lives in the tools module so that gofakes3 and its
// dependencies stay out of the main go.mod; the other test servers (files
// over HTTP, a fake Hub) are in internal/remotetest, which tests of the
// main module use.
package s3fake
