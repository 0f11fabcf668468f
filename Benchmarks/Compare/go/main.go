// Go x/oauth2 contender for scripts/bench-compare: client_credentials grants against a
// token endpoint, sequentially or with N in flight, over one keep-alive HTTP client.
//
//	go run main.go TOKEN_URL CLIENT_ID CLIENT_SECRET SCOPE COUNT IN_FLIGHT
//
// Prints "<count> <seconds>" after a warm-up of 50 grants; exits 1 on any failure.
// Built offline against Debian's golang-golang-x-oauth2-dev (GOPATH=/usr/share/gocode,
// GO111MODULE=off).
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: TOKEN_URL CLIENT_ID CLIENT_SECRET SCOPE COUNT IN_FLIGHT")
		os.Exit(2)
	}
	count, _ := strconv.Atoi(os.Args[5])
	inFlight, _ := strconv.Atoi(os.Args[6])
	config := clientcredentials.Config{
		ClientID: os.Args[2], ClientSecret: os.Args[3], TokenURL: os.Args[1],
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if os.Args[4] != "" {
		config.Scopes = []string{os.Args[4]}
	}
	// One client whose pool keeps a connection per request in flight.
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: transport})
	var failures int64
	grant := func() {
		token, err := config.Token(ctx)
		if err != nil || token.AccessToken == "" {
			if atomic.AddInt64(&failures, 1) == 1 {
				fmt.Fprintln(os.Stderr, "grant failed:", err)
			}
		}
	}
	run := func(n int) {
		if inFlight <= 1 {
			for i := 0; i < n; i++ {
				grant()
			}
			return
		}
		var next int64 = -1
		var wg sync.WaitGroup
		for w := 0; w < inFlight; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for atomic.AddInt64(&next, 1) < int64(n) {
					grant()
				}
			}()
		}
		wg.Wait()
	}
	run(50)
	start := time.Now()
	run(count)
	elapsed := time.Since(start).Seconds()
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "%d grants failed\n", failures)
		os.Exit(1)
	}
	fmt.Printf("%d %.6f\n", count, elapsed)
}
