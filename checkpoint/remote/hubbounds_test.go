package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// isAPI is a request to the Hub API (the revision's description).
func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// TestHubAnswerOverLimit: a description of the revision over
// maxHubAnswer is refused once, declared or not, and never asked again.
func TestHubAnswerOverLimit(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("Content-Length %v", declared), func(t *testing.T) {
			hub, _ := newHub(t, "")
			var api atomic.Int64
			hub.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if !isAPI(r) {
					return false
				}
				api.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if declared {
					w.Header().Set("Content-Length", fmt.Sprint(maxHubAnswer+1))
				}
				io.CopyN(w, zeros{}, maxHubAnswer+1)
				return true
			})
			var w waits
			_, err := open("hf://org/model", hubOpts(&w, hub))
			if err == nil || !strings.Contains(err.Error(), "the Hub's answer is over 67,108,864 bytes") {
				t.Errorf("error %v", err)
			}
			if api.Load() != 1 || len(w.List()) != 0 {
				t.Errorf("asked %d times, waits %v: a size limit is not temporary", api.Load(), w.List())
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// hubListing answers the revision's description with the repository's
// files and extra names, as a model-info listing would.
func hubListing(dir string, extra []string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !isAPI(r) {
			return false
		}
		type sib struct {
			Name string `json:"rfilename"`
		}
		var sibs []sib
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			sibs = append(sibs, sib{e.Name()})
		}
		for _, n := range extra {
			sibs = append(sibs, sib{n})
		}
		json.NewEncoder(w).Encode(map[string]any{"sha": commitMain, "siblings": sibs})
		return true
	}
}

// TestHubManyListedFiles: a listing of 100,000 .safetensors files beside
// an index naming three opens the three.
func TestHubManyListedFiles(t *testing.T) {
	hub, dir := newHub(t, "")
	os.Remove(filepath.Join(dir, "repo", "stray.safetensors"))
	extra := make([]string, 100_000)
	for i := range extra {
		extra[i] = fmt.Sprintf("junk-%06d.safetensors", i)
	}
	hub.Intercept(hubListing(filepath.Join(dir, "repo"), extra))
	var w waits
	c := openRemoteT(t, "hf://org/model", hubOpts(&w, hub))
	if len(c.Shards) != 3 || len(c.Unreferenced) != len(extra) {
		t.Errorf("%d shards, %d unreferenced", len(c.Shards), len(c.Unreferenced))
	}
	for _, r := range hub.Log() {
		if strings.Contains(r.Path, "junk-") {
			t.Fatalf("opened a file the index does not name: %s (%d requests in all)", r.Path, hub.Requests())
		}
	}
}

// TestHubIndexNamingTooMany: an index naming more than MaxShards shards
// is an error before any of them is asked for.
func TestHubIndexNamingTooMany(t *testing.T) {
	hub, dir := newHub(t, "")
	weights := map[string]string{}
	for i := range 5000 {
		weights[fmt.Sprintf("t%d", i)] = fmt.Sprintf("model-%05d-of-05000.safetensors", i+1)
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weights})
	os.WriteFile(filepath.Join(dir, "repo", "model.safetensors.index.json"), b, 0o644)
	var w waits
	_, err := open("hf://org/model", hubOpts(&w, hub))
	if err == nil || !strings.Contains(err.Error(), "5000 shards named by model.safetensors.index.json, more than the 4096 shards ckptcheck opens") {
		t.Fatalf("error %v", err)
	}
	for _, r := range hub.Log() {
		if strings.Contains(r.Path, "-of-05000") {
			t.Fatalf("asked for %s", r.Path)
		}
	}
}
