package main

import "errors"

func cmdChatConvert(args []string) error {
	return errors.New("lnk agent chat convert is not in this version")
}
