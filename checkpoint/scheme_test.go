package checkpoint

import (
	"context"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func TestUnlinkedScheme(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"s3://bucket/ckpt", "s3://bucket/ckpt: s3:// paths need the s3 source linked in (import github.com/ckptcheck/ckptcheck/checkpoint/remote/s3)"},
		{"HF://org/name", "hf:// paths need the hf source linked in (import github.com/ckptcheck/ckptcheck/checkpoint/remote)"},
		{"https://host/model.safetensors", "(import github.com/ckptcheck/ckptcheck/checkpoint/remote)"},
	} {
		if !IsRemote(tc.path) {
			t.Errorf("%s: not remote", tc.path)
		}
		_, err := Open(context.Background(), tc.path, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	for _, p := range []string{"ftp://host/x", "./a://b", "org/name", ""} {
		if IsRemote(p) {
			t.Errorf("%q: remote", p)
		}
	}
}

func TestRegisterScheme(t *testing.T) {
	dir := t.TempDir()
	if err := fixture.WriteSharded(dir, fixture.Tiny.Tensors(safetensors.BF16), 2, fixture.Tiny.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	var got Options
	t.Cleanup(func() { // so that -count=2 registers it afresh
		schemesMu.Lock()
		defer schemesMu.Unlock()
		delete(schemes, "testmem")
	})
	RegisterScheme("TestMem", func(ctx context.Context, p string, opt Options) (*Location, error) {
		got = opt
		return &Location{Source: Dir(dir), Hub: &HubRef{Repo: "org/name"}, Remote: &Remote{Kind: "testmem", Name: p}}, nil
	})
	p := "testmem://anything"
	if !IsRemote(p) {
		t.Fatal("a registered scheme is not remote")
	}
	c, err := Open(context.Background(), p, Options{Remote: RemoteOptions{Token: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Path != p || len(c.Shards) != 2 || c.Index == nil || c.Hub.Repo != "org/name" || c.Remote.Name != p || c.IsRemote() || got.Remote.Token != "t" {
		t.Errorf("%+v", c)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration did not panic")
		}
	}()
	RegisterScheme("testmem", func(context.Context, string, Options) (*Location, error) { return nil, nil })
}
