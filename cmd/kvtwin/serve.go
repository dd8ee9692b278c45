package main

import "github.com/spf13/cobra"

func newServeCmd() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "placeholder until server lands"}
}
