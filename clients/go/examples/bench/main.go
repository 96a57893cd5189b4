// SPDX-License-Identifier: BSD-3-Clause

// Command bench measures IDs/s through Client.Next (or a Sequence per
// goroutine) from THREADS goroutines, after a warm-up of 0.3 s.
// usage: bench SERVER THREADS SECONDS [tuned|defaults] [next|sequence]   (prints "ids_per_s N")
// tuned (the default): Trusted, Prefetch 4096, LowWater 1024; defaults: DefaultOptions();
// baseline: no client, an in-process atomic counter (sync/atomic), the ceiling of any hand-out.
// next (the default): every goroutine calls the shared Client.Next.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	flakewire "github.com/flakewire/flakewire/clients/go"
)

func main() {
	if len(os.Args) < 4 || len(os.Args) > 6 {
		fmt.Fprintln(os.Stderr, "usage: bench SERVER THREADS SECONDS [tuned|defaults] [next|sequence]")
		os.Exit(2)
	}
	threads, _ := strconv.Atoi(os.Args[2])
	secs, _ := strconv.ParseFloat(os.Args[3], 64)
	o := flakewire.DefaultOptions()
	seq := len(os.Args) > 5 && os.Args[5] == "sequence"
	var counter atomic.Uint64
	baseline := len(os.Args) > 4 && os.Args[4] == "baseline"
	if len(os.Args) < 5 || os.Args[4] == "tuned" {
		o.Trusted, o.Prefetch, o.LowWater = true, 4096, 1024
	}
	c, err := flakewire.New([]string{os.Args[1]}, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer c.Close()
	if _, err := c.Next(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	run := func(d time.Duration) float64 {
		var total atomic.Uint64
		start := time.Now()
		stop := start.Add(d)
		var wg sync.WaitGroup
		for k := 0; k < threads; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := c.Next
				if seq {
					next = c.Sequence().Next
				}
				if baseline {
					next = func() (uint64, error) { return counter.Add(1), nil }
				}
				n := uint64(0)
				for time.Now().Before(stop) {
					for i := 0; i < 256; i++ {
						if _, err := next(); err != nil {
							fmt.Fprintln(os.Stderr, "bench:", err)
							os.Exit(1)
						}
					}
					n += 256
				}
				total.Add(n)
			}()
		}
		wg.Wait()
		return float64(total.Load()) / time.Since(start).Seconds()
	}
	run(300 * time.Millisecond) // warm-up: refills grown, goroutines and Ps running
	fmt.Printf("ids_per_s %.0f\n", run(time.Duration(secs*float64(time.Second))))
}
