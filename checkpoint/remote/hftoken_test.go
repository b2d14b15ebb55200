package remote

import (
	"errors"
	"strings"
	"testing"
)

// TestHFMalformedToken: a token with a line break or another control
// character inside is refused before any request, in one line that does
// not show it.
func TestHFMalformedToken(t *testing.T) {
	hub, _ := newHub(t, "")
	for _, tc := range []struct{ token, want string }{
		{"hf_secret\r\nX-Injected: 1", "a line break"},
		{"hf_sec\nret", "a line break"},
		{"hf_sec\x00ret", "a control character"},
		{"hf_sec\tret", "a control character"},
		{"hf_sec ret", "a space"},
		{"hf_séc", "a character outside printable ASCII"},
	} {
		var w waits
		opt := hubOpts(&w, hub)
		opt.Remote.Token = tc.token
		hub.Reset()
		_, err := open("hf://org/model", opt)
		if !errors.Is(err, ErrMalformedToken) || !strings.Contains(err.Error(), "hf://org/model: the Hub token is malformed: it holds "+tc.want) {
			t.Errorf("%q: %v", tc.token, err)
			continue
		}
		if strings.Contains(err.Error(), "hf_sec") || strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("%q: the message shows the token or is not one line: %q", tc.token, err)
		}
		if hub.Requests() != 0 {
			t.Errorf("%q: %d requests", tc.token, hub.Requests())
		}
	}
	// Surrounding white space is the caller's to trim (the CLI does, as
	// huggingface_hub); a plain token goes through.
	var w waits
	c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
	if len(c.Shards) != 3 {
		t.Errorf("%+v", c)
	}
}
