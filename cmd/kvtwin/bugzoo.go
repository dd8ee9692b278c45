package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/equiv/mutants"
)

func newBugzooCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bugzoo",
		Short: "Print docs/bugzoo.md: every historic bug, its mutant, fixture and the cases needed to kill it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			md, err := mutants.ZooMarkdown()
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), md)
			return err
		},
	}
}
