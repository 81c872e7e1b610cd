//go:build !realwork

package main

// who says that the build ran without the person's go settings.
const who = "nobody: the settings of go env -w were not read"
