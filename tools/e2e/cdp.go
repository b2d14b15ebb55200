// Package e2e holds ckptcheck's end-to-end tests (run by make e2e): the HTML
// report rendered in headless Chromium, the GitHub Action's script, and the
// container image where a container can run. Its tests skip unless
// CKPTCHECK_E2E=1.
//
// The browser is driven through the Chrome DevTools Protocol over a pipe
// (--remote-debugging-pipe): no port is opened, and nothing is downloaded;
// the browser is Debian's chromium.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// chromiumFlags keep the browser off the network and out of the user's
// profile: a fresh --user-data-dir is added per run.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--no-first-run", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-gpu",
	"--disable-extensions", "--mute-audio", "--remote-debugging-pipe",
}

// A browser is a headless Chromium and a DevTools client talking to it
// over fds 3 (commands in) and 4 (replies and events out).
type browser struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	mu   sync.Mutex
	next int
	wait map[int]chan reply
	// events receives every event, in order; the reader drops events
	// when nobody reads them for long.
	events chan event
	done   chan struct{}
	err    error
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// startBrowser starts chromium (the binary at path) with profile as its
// user data directory.
func startBrowser(ctx context.Context, path, profile string) (*browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, append(chromiumFlags, "--user-data-dir="+profile, "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fd 3, fd 4
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	cmdR.Close()
	outW.Close()
	b := &browser{cmd: cmd, in: cmdW, wait: map[int]chan reply{}, events: make(chan event, 4096), done: make(chan struct{})}
	go b.read(outR)
	return b, nil
}

// read dispatches the browser's messages, NUL-terminated JSON, until the
// pipe closes.
func (b *browser) read(r io.Reader) {
	defer close(b.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.err = err
			return
		}
		var m struct {
			ID int `json:"id"`
			reply
			event
		}
		if err := json.Unmarshal(msg[:len(msg)-1], &m); err != nil {
			b.err = fmt.Errorf("reading the browser: %w", err)
			return
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.wait[m.ID]
			delete(b.wait, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m.reply
			}
			continue
		}
		select {
		case b.events <- m.event:
		default: // nobody is listening: drop it
		}
	}
}

// call sends a command (to a page's session, or the browser when session
// is "") and decodes its result into out, if out is not nil.
func (b *browser) call(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan reply, 1)
	b.wait[id] = ch
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err == nil {
		_, err = b.in.Write(append(data, 0))
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("%s: the browser went away: %v", method, b.err)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close ends the browser: politely, then, after a few seconds, by killing
// it.
func (b *browser) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	b.in.Close()
	waited := make(chan error, 1)
	go func() { waited <- b.cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		err = <-waited
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed or closed: either is the end we asked for
	}
	return err
}

// A page is a tab, attached through its own session.
type page struct {
	b       *browser
	session string
}

// newPage opens a blank tab and attaches to it.
func (b *browser) newPage(ctx context.Context) (*page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	return &page{b: b, session: attached.SessionID}, nil
}

func (p *page) call(ctx context.Context, method string, params, out any) error {
	return p.b.call(ctx, p.session, method, params, out)
}

// eval evaluates a JavaScript expression in the page and decodes its value
// (returned by value: JSON-able) into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluating %.60q: %s %s", expr, e.Text, e.Exception.Description)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}
