// Package s3 reads s3://bucket/prefix checkpoints through the AWS SDK for
// Go v2. Importing it registers the s3 scheme with
// checkpoint.RegisterScheme; it is the only package of the module that
// links the SDK, so a program that imports checkpoint (or
// checkpoint/remote) alone does not.
//
// Credentials and region come from the environment and the shared files
// in the AWS CLI's order (awsconfig.go, credentials.go: keys, profiles,
// assumed roles, web identity, SSO's cached token, credential_process,
// container and instance roles). They are read here, not by the SDK's
// config package, whose STS and SSO clients would add half a millisecond
// of package initialisation to every run of the binary.
// AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 point it at an S3-compatible
// store, addressed path-style then.
// checkpoint.RemoteOptions.NoSignRequest (--no-sign-request) reads public
// buckets without credentials. Objects are read by ranged GetObject calls
// through package remote's files: its retries (the SDK's are off, so they
// do not multiply), ETag pinning with If-Match, and read-ahead.
package s3
