package log

import "encoding/binary"

// lastNewline returns the index of the last '\n' in b, or -1. It reads
// eight bytes at a time: bytes.LastIndexByte reads one, and finding lines
// from the end is most of what reading the newest events costs.
func lastNewline(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		nls   = ones * '\n'
	)
	i := len(b)
	for i >= 8 {
		x := binary.LittleEndian.Uint64(b[i-8:i]) ^ nls // a '\n' is now a zero byte
		if (x-ones)&^x&highs != 0 {
			break // there is one among these eight
		}
		i -= 8
	}
	for i > 0 {
		i--
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}
