// Command goapp is the Go module of the real-work test
// (rpc/realwork_test.go): a main package built with go build ./...
package main

import (
	"fmt"
	"strings"
)

// greet is what the test checks.
func greet(name string) string {
	return "hello, " + strings.TrimSpace(name)
}

func main() {
	fmt.Println(greet(who))
}
