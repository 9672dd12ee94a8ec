// Command jsctl is a control-plane CLI for NATS JetStream.
package main

import (
	"os"

	"github.com/jsctl/jsctl/commands"
)

func main() { os.Exit(commands.Main(os.Args[1:])) }
