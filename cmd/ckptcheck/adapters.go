package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/verify"
)

func adaptersCommand() *cli.Command {
	return &cli.Command{
		Name:      "adapters",
		Usage:     "list the adapter presets, or print one's rule file",
		ArgsUsage: "[NAME]",
		Flags:     []cli.Flag{formatFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 0, 1, "[NAME]"); err != nil {
				return err
			}
			w := cmd.Root().Writer
			if name := cmd.Args().First(); name != "" {
				a, err := (&adapter.Registry{}).Lookup(name)
				if err != nil {
					return err
				}
				_, err = io.WriteString(w, a.Source)
				return err
			}
			type entry struct {
				Name     string   `json:"name"`
				Doc      string   `json:"doc"`
				Families []string `json:"families,omitempty"`
			}
			var list []entry
			for _, a := range adapter.Presets() {
				list = append(list, entry{a.Name, a.Doc, a.Families})
			}
			if cmd.String("format") == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			rows := make([][]string, len(list))
			for i, e := range list {
				doc := e.Doc
				if len(e.Families) > 0 {
					doc += " [model_type " + strings.Join(e.Families, ", ") + "]"
				}
				rows[i] = []string{e.Name, doc}
			}
			if err := verify.WriteColumns(w, rows, ""); err != nil {
				return err
			}
			_, err := fmt.Fprintln(w, "\nChain them with commas (--adapter exported=torchtitan-hf,compile); `ckptcheck adapters NAME` prints a preset's rules.")
			return err
		},
	}
}
