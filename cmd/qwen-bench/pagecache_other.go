//go:build !linux

package main

import "errors"

func dropFromPageCache(string) error {
	return errors.New("only on Linux")
}

func filePMDMappedKB(int) (int, error) { return 0, nil }
