//go:build realwork

package main

// who is "world" when the build has the realwork tag, which the person's
// go settings (go env -w GOFLAGS=-tags=realwork) give it.
const who = "world"
