package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/report"
)

func adaptersCommand() *cli.Command {
	return &cli.Command{
		Name:      "adapters",
		Usage:     "list the adapter presets, or print one's rule file",
		ArgsUsage: "[NAME]",
		Flags:     []cli.Flag{listFormatFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 0, 1, "[NAME]"); err != nil {
				return err
			}
			w := cmd.Root().Writer
			type entry struct {
				Name     string   `json:"name"`
				Doc      string   `json:"doc"`
				Auto     string   `json:"auto"`
				Families []string `json:"families,omitempty"`
				Covers   []string `json:"covers,omitempty"`
				Source   string   `json:"source,omitempty"`
			}
			describe := func(a *adapter.Adapter) entry {
				return entry{Name: a.Name, Doc: a.Doc, Auto: a.Auto.String(), Families: a.Families, Covers: a.Covers}
			}
			if name := cmd.Args().First(); name != "" {
				a, err := (&adapter.Registry{}).Lookup(name)
				if err != nil {
					return usageError("%v", err)
				}
				if cmd.String("format") == "json" {
					e := describe(a)
					e.Source = a.Source
					return writeJSON(w, e)
				}
				_, err = io.WriteString(w, a.Source)
				return err
			}
			var list []entry
			for _, a := range adapter.Presets() {
				list = append(list, describe(a))
			}
			if cmd.String("format") == "json" {
				return writeJSON(w, list)
			}
			rows := make([][]string, len(list))
			for i, e := range list {
				doc := e.Doc
				if len(e.Families) > 0 {
					doc += " [model_type " + strings.Join(e.Families, ", ") + "]"
				}
				rows[i] = []string{e.Name, e.Auto, doc, strings.Join(e.Covers, "; ")}
			}
			if err := report.Table(w, []string{"NAME", "AUTO", "MAPS", "COVERS"}, rows); err != nil {
				return err
			}
			_, err := fmt.Fprintln(w, "\nChain them with commas (--adapter exported=torchtitan-hf,compile); `ckptcheck adapters NAME` prints a preset's rules.")
			return err
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
