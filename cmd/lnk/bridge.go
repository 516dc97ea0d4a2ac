package main

import "errors"

func cmdStoreBridge(args []string) error {
	return errors.New("lnk store-bridge is not in this version")
}
