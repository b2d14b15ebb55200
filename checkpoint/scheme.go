package checkpoint

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// Remote checkpoints are read where they are, by sources that register an
// opener for their URL scheme, as image formats and database/sql drivers
// register themselves: this package names none of them. Linking
// github.com/ckptcheck/ckptcheck/checkpoint/remote adds https://, http://
// and hf://; checkpoint/remote/s3 adds s3://.

// An Opener finds the checkpoint at a path of its scheme: the source
// holding its files and what the path names there. It reads no more than
// it must to answer (for a remote source, the named file's first bytes).
type Opener func(ctx context.Context, path string, opt Options) (*Location, error)

// A Location is where an Opener found a checkpoint. Open then reads it as
// it reads a local one (OpenSource), and records Hub and Remote.
type Location struct {
	// Source holds the checkpoint's files.
	Source Source
	// Name is what the path names in Source: "" for its root read as a
	// directory, a *.index.json, or one file, which the Opener has made
	// sure exists.
	Name string
	// Hub is the Hub repository and commit the path resolved to, if any.
	Hub *HubRef
	// Remote is what the Checkpoint records as its Remote when Source is
	// not a RemoteSource (an hf:// path read offline from the hub cache
	// through a Dir).
	Remote *Remote
}

// A RemoteSource is a Source over the network. Its reads are round trips,
// so more of them are kept in flight, and it says where it read from (the
// versions of the files opened so far) as a report records it.
type RemoteSource interface {
	Source
	Remote() *Remote
}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]Opener{}
)

// wellKnown are the schemes ckptcheck's own remote sources serve: paths
// with them are remote even when no source for them is linked, and Open
// says which package to link.
var wellKnown = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"https": "github.com/ckptcheck/ckptcheck/checkpoint/remote",
		"http":  "github.com/ckptcheck/ckptcheck/checkpoint/remote",
		"hf":    "github.com/ckptcheck/ckptcheck/checkpoint/remote",
		"s3":    "github.com/ckptcheck/ckptcheck/checkpoint/remote/s3",
	}
})

// RegisterScheme makes Open read paths "scheme://…" through open. Sources
// call it from an init function. The scheme is matched without regard to
// case; registering one twice, or an empty one, panics.
func RegisterScheme(scheme string, open Opener) {
	s := strings.ToLower(scheme)
	if s == "" || strings.Contains(s, ":") || open == nil {
		panic("checkpoint: RegisterScheme(" + scheme + "): an empty scheme or a nil opener")
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if _, dup := schemes[s]; dup {
		panic("checkpoint: RegisterScheme called twice for " + s)
	}
	schemes[s] = open
}

// schemeOf is the lower-cased scheme of "scheme://…", "" for a path
// without one.
func schemeOf(path string) string {
	s, _, ok := strings.Cut(path, "://")
	if !ok || s == "" || strings.ContainsAny(s, `/\`) {
		return ""
	}
	return strings.ToLower(s)
}

// IsRemote reports whether path names a remote checkpoint: it starts with
// scheme:// for a registered scheme, or for one of https, http, hf and s3,
// which Open refuses with an error saying what to link when no source for
// it is.
func IsRemote(path string) bool {
	s := schemeOf(path)
	if s == "" {
		return false
	}
	if _, ok := wellKnown()[s]; ok {
		return true
	}
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	_, ok := schemes[s]
	return ok
}

// openRemote opens a checkpoint at a remote path through its scheme's
// Opener.
func openRemote(ctx context.Context, p string, opt Options) (*Checkpoint, error) {
	s := schemeOf(p)
	schemesMu.RLock()
	open := schemes[s]
	schemesMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("%s: %s:// paths need the %s source linked in (import %s)", p, s, s, wellKnown()[s])
	}
	loc, err := open(ctx, p, opt)
	if err != nil {
		return nil, err
	}
	if loc == nil || loc.Source == nil {
		return nil, fmt.Errorf("%s: the %s:// source found no checkpoint", p, s)
	}
	// The checkpoint owns the source: closing it (or failing to open it)
	// closes the source's files opened ahead and its connections.
	c := &Checkpoint{Path: p, Source: loc.Source, Hub: loc.Hub, ownSource: true}
	if _, err := c.opened(c.open(ctx, loc.Name, opt)); err != nil {
		return nil, err
	}
	c.Remote = loc.Remote
	if rs, ok := loc.Source.(RemoteSource); ok {
		c.Remote = rs.Remote()
	}
	return c, nil
}

// openConcurrency is how many shard headers are read at once: more for
// remote sources, where each read is a round trip.
func (c *Checkpoint) openConcurrency() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if c.IsRemote() {
		n = max(n, 32)
	}
	return n
}

// IsRemote reports whether the checkpoint's files are read over the
// network; value comparison then keeps more reads in flight.
func (c *Checkpoint) IsRemote() bool {
	_, ok := c.Source.(RemoteSource)
	return ok
}
