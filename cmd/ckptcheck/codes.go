package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func codesCommand() *cli.Command {
	return &cli.Command{
		Name:  "codes",
		Usage: "list every finding code with its severity and meaning",
		Flags: []cli.Flag{listFormatFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 0, 0, ""); err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.String("format") == "json" {
				return writeJSON(w, verify.Codes())
			}
			var rows [][]string
			for _, c := range verify.Codes() {
				rows = append(rows, []string{string(c.Code), c.Severity.String(), c.Doc})
			}
			return report.Table(w, []string{"CODE", "SEVERITY", "MEANING"}, rows)
		},
	}
}
