package home

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"lnk.dev/linkharness/store"
)

// A thread's folder is named by its thread, and two threads never share
// one (FORMATS.md, "An agent's home"). A plain name, every byte of it one
// of [a-z0-9._-], is its folder's name as it is: web-1 is chats/web-1. Any
// other name, one holding a byte outside [A-Za-z0-9._-] or an upper-case
// letter, which a case-insensitive disk (macOS's, by default) would fold
// into another's, names a folder of two parts: the name with each byte
// outside [A-Za-z0-9._-] made '-', for people to read (its first 183
// bytes, so the folder's name is at most 200), then '~' and a hash of the
// whole name:
//
//	telegram:42  chats/telegram-42~<16 characters>
//	Web1         chats/Web1~<16 characters>
//
// No plain name holds '~', so none makes a folder with a hash; no two
// names make one hash but by chance, which 80 bits make negligible; and a
// folder name holds no byte outside ASCII, so no disk normalizes it into
// another's. Before this rule a folder was the readable part alone
// (FormerThreadDir), which two names could share (telegram:42 and
// telegram-42); a conversation made then keeps that folder, found by the
// thread its first event names (package chatdir).

// Part of the format of an agent's home.
const (
	// dirSep starts the hash in the folder of a name that is not plain.
	// It is outside the bytes a plain name holds.
	dirSep = '~'
	// dirHashChars is the length of that hash: the first 80 bits of the
	// SHA-256 of the whole name, in RFC 4648 base32 in lower case (a-z,
	// 2-7), so no case-insensitive disk folds two hashes into one.
	dirHashChars = 16
)

// hashAlphabet is RFC 4648's base32 alphabet, in lower case.
const hashAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// MaxDirBytes is the longest folder name a thread makes, as long as the
// longest name: a driver keeps a conversation under its folder's name, and
// keeps keys of up to 200 bytes; well within the 255 bytes a folder's name
// may have on every common disk. A readable part longer than what leaves
// room for the separator and the hash is cut.
const MaxDirBytes = MaxThreadBytes

// ThreadDir returns the folder name of a thread: the name itself when it
// is plain (every byte one of [a-z0-9._-]), else the name with each byte
// outside [A-Za-z0-9._-] made '-', then dirSep and the name's hash
// (telegram:42 is telegram-42~<hash>). It refuses the empty name, "." and
// "..", names over MaxThreadBytes, and names holding a path separator or a
// control character, which no connection's thread names hold and which
// only an attempt on the paths would send. It refuses too a thread whose
// folder would bear a name the stores or the harness keep for themselves
// beside the conversations' folders or in them (store.Reserved:
// events.sqlite, events.pebble, store.sqlite, chat.md, end …, whatever its
// case), which would be taken for the store's own file and break every
// conversation it keeps. Two threads never map to one folder.
func ThreadDir(thread string) (string, error) {
	if err := checkThread(thread); err != nil {
		return "", err
	}
	readable := thread
	plain := plainThread(thread)
	if !plain {
		readable = formerDir(thread)
	}
	if store.Reserved(readable) {
		return "", fmt.Errorf("%w: thread name %q: its folder would bear %q, a name the stores keep for themselves", ErrBadName, thread, readable)
	}
	if plain {
		return thread, nil
	}
	return hashedDir(readable, thread), nil
}

// FormerThreadDir returns the folder the rule before ThreadDir's gave
// thread (each byte outside [A-Za-z0-9._-] made '-', telegram:42 was
// telegram-42), and true, when it is another than ThreadDir's: a
// conversation made before keeps its folder (see package chatdir). It
// returns false for a plain name, whose folder is the same under both
// rules, and for a name either refuses.
func FormerThreadDir(thread string) (string, bool) {
	if checkThread(thread) != nil || plainThread(thread) {
		return "", false
	}
	dir := formerDir(thread)
	if store.Reserved(dir) {
		return "", false
	}
	return dir, true
}

// IsThreadDir says whether name is a folder name a thread makes, by
// ThreadDir or by the rule before it (FormerThreadDir): a conversation's
// folder under chats/, rather than a store's file or folder
// (store.Reserved) or a conversion's beside a conversation's (~convert).
func IsThreadDir(name string) bool {
	readable, hash, hashed := strings.Cut(name, string(dirSep))
	if hashed && (!isHash(hash) || len(name) > MaxDirBytes) {
		return false
	}
	if checkThread(readable) != nil || store.Reserved(readable) {
		return false
	}
	for i := 0; i < len(readable); i++ {
		if !plainByte(readable[i]) {
			return false
		}
	}
	return true
}

// checkThread refuses a thread name no folder is made of.
func checkThread(thread string) error {
	switch {
	case thread == "":
		return fmt.Errorf("%w: empty thread name", ErrBadName)
	case len(thread) > MaxThreadBytes:
		return fmt.Errorf("%w: thread name of %d bytes, over %d", ErrBadName, len(thread), MaxThreadBytes)
	case thread == "." || thread == "..":
		return fmt.Errorf("%w: thread name %q", ErrBadName, thread)
	case strings.ContainsAny(thread, "/\\"):
		return fmt.Errorf("%w: thread name %q holds a path separator", ErrBadName, thread)
	}
	for i := 0; i < len(thread); i++ {
		if thread[i] < 0x20 || thread[i] == 0x7f {
			return fmt.Errorf("%w: thread name %q holds a control character", ErrBadName, thread)
		}
	}
	return nil
}

// plainThread says whether every byte of thread is one of [a-z0-9._-]: a
// name that is its own folder's, on any disk.
func plainThread(thread string) bool {
	for i := 0; i < len(thread); i++ {
		if c := thread[i]; !plainByte(c) || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// formerDir is thread with each byte outside [A-Za-z0-9._-] made '-'.
func formerDir(thread string) string {
	b := []byte(thread)
	for i, c := range b {
		if !plainByte(c) {
			b[i] = '-'
		}
	}
	return string(b)
}

// hashedDir is readable, cut to leave room within MaxDirBytes, dirSep and
// the hash of thread.
func hashedDir(readable, thread string) string {
	readable = readable[:min(len(readable), MaxDirBytes-1-dirHashChars)]
	sum := sha256.Sum256([]byte(thread))
	var b strings.Builder
	b.Grow(len(readable) + 1 + dirHashChars)
	b.WriteString(readable)
	b.WriteByte(dirSep)
	// 80 bits, five at a time.
	var acc uint64
	bits := 0
	for _, c := range sum[:dirHashChars*5/8] {
		acc = acc<<8 | uint64(c)
		for bits += 8; bits >= 5; {
			bits -= 5
			b.WriteByte(hashAlphabet[acc>>bits&31])
		}
	}
	return b.String()
}

// isHash says whether s is a hash as hashedDir writes one.
func isHash(s string) bool {
	if len(s) != dirHashChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.Contains(hashAlphabet, s[i:i+1]) {
			return false
		}
	}
	return true
}
