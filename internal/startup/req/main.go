// Command req is the least a Go program does to send one NATS request:
// connect, send the request, print the reply. The start-up benchmark
// (internal/startup) runs it beside jsctl and `nats req` as the floor of a
// process that asks one question.
//
//	req URL SUBJECT PAYLOAD
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: req URL SUBJECT PAYLOAD")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "req:", err)
		os.Exit(1)
	}
}

func run(url, subject, payload string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	m, err := nc.Request(subject, []byte(payload), 5*time.Second)
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(m.Data))
	return err
}
