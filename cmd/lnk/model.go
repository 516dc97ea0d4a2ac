package main

import "errors"

func cmdModel(args []string) error {
	return errors.New("lnk model is not in this version")
}
