// Command svc runs every role of the service and its operator commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/svcdev/svc/internal/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmdline.Run(ctx, os.Args, cmdline.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()})
	stop()
	os.Exit(code)
}
