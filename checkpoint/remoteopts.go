package checkpoint

import (
	"net/http"
	"time"
)

// RemoteOptions configure remote paths. They are plain data: the library
// reads no credentials, endpoints or modes from the environment (the
// command line reads HF_TOKEN, HF_ENDPOINT and HF_HUB_OFFLINE and passes
// them in here); only s3:// goes through the AWS SDK's own configuration.
type RemoteOptions struct {
	// Revision is the hf:// revision (branch, tag, commit or "refs/pr/3")
	// for a path that gives none with @REV; "" is main.
	Revision string
	// Timeout bounds each request: its answer, its body and its retries
	// together; 0 means DefaultTimeout.
	Timeout time.Duration
	// NoSignRequest reads s3:// without credentials, as the AWS CLI's
	// --no-sign-request: public buckets.
	NoSignRequest bool
	// Token is the Hugging Face Hub token, sent as a Bearer token to
	// Endpoint's exact origin only; "" reads public repositories.
	Token string
	// Endpoint is the Hub, DefaultHubEndpoint when "". URLs under it of
	// the form Endpoint/org/name/resolve/REV/FILE are read as hf:// paths.
	Endpoint string
	// Offline reads hf:// paths from the local hub cache only, without a
	// request, as huggingface_hub's HF_HUB_OFFLINE.
	Offline bool
	// Transport carries the requests of https://, http:// and hf:// paths;
	// nil is one of their own, which keeps connections for many ranged
	// reads at once. The token is added, and redirects checked, above it.
	// s3:// goes through the AWS SDK's own client and configuration.
	Transport http.RoundTripper
}

// DefaultTimeout bounds one request to a remote store.
const DefaultTimeout = 60 * time.Second

// DefaultHubEndpoint is the Hub when RemoteOptions.Endpoint is "".
const DefaultHubEndpoint = "https://huggingface.co"

// A Remote says where a remote checkpoint was read from, as a report
// records it: never a signed URL or a credential.
type Remote struct {
	// Kind is the scheme: "https", "http", "hf" or "s3".
	Kind string `json:"kind"`
	// Name is the resolved name: the URL without query or credentials,
	// hf://org/name@commit[/subdir], or s3://bucket/prefix.
	Name string `json:"name"`
	// Listed says whether the source could list its files: plain HTTP
	// cannot, so shards beside an index that it does not name
	// (unreferenced_shard) are not looked for.
	Listed bool `json:"listed"`
	// Offline is set when RemoteOptions.Offline (HF_HUB_OFFLINE) made an
	// hf:// path read only the local hub cache.
	Offline bool `json:"offline,omitempty"`
	// Files are the files read, with the version each had.
	Files []FileVersion `json:"files,omitempty"`
}

// A FileVersion is which version of a remote file was read.
type FileVersion struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// ETag is the store's entity tag for the bytes read.
	ETag string `json:"etag,omitempty"`
	// SHA256 is the Git LFS object id the Hub lists for the file.
	SHA256 string `json:"sha256,omitempty"`
	// Cached says the file was read from the local hub cache.
	Cached bool `json:"cached,omitempty"`
}
