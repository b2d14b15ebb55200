package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/verify"
)

func codesCommand() *cli.Command {
	return &cli.Command{
		Name:  "codes",
		Usage: "list every finding code with its severity and meaning",
		Flags: []cli.Flag{formatFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 0, 0, ""); err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.String("format") == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(verify.Codes)
			}
			tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
			for _, c := range verify.Codes {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Code, c.Severity, c.Doc)
			}
			return tw.Flush()
		},
	}
}
