package main

import "errors"

func cmdLoadgen(args []string) error {
	return errors.New("lnk loadgen is not in this version")
}
