// SPDX-License-Identifier: BSD-3-Clause

// Command example prints a few IDs from flakewire responders and takes the
// first apart. usage: example [SERVER...]   (default 127.0.0.1:4242)
package main

import (
	"fmt"
	"os"

	flakewire "github.com/flakewire/flakewire/clients/go"
)

func main() {
	servers := os.Args[1:]
	if len(servers) == 0 {
		servers = []string{"127.0.0.1:4242"}
	}
	c, err := flakewire.New(servers, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
	defer c.Close()
	var first uint64
	for i := 0; i < 5; i++ {
		id, err := c.Next()
		if err != nil {
			fmt.Fprintln(os.Stderr, "example:", err)
			os.Exit(1)
		}
		if i == 0 {
			first = id
		}
		fmt.Println(id)
	}
	l, err := c.Layout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
	p, _ := l.Decode(first)
	fmt.Printf("first: unix_ms %d datacenter %d worker %d sequence %d\n", p.UnixMs, p.Datacenter, p.Worker, p.Sequence)
}
