// Package osfile opens and reads the small files a turn touches (settings,
// the prompt's files, what was told, the id index) with fewer system calls
// than package os.
//
// os.OpenFile on Linux tries every file it opens with the runtime's
// netpoller: it sets the descriptor non-blocking (fcntl twice), asks epoll
// to watch it (which refuses a regular file) and sets it back (fcntl
// twice): five calls besides the open, for nothing, on a file. Open here
// makes the open(2) call itself and hands the descriptor to os.NewFile,
// which, for a blocking descriptor, asks one fcntl and no epoll. ReadFile
// uses no *os.File at all: open, fstat, one read of the whole file, close.
// OpenFD, Pread and Pwrite are for a file kept open and read and written at
// known offsets (a turn's told record, its copy for people): a bare
// descriptor, each call one system call. Read is one read of a bare
// descriptor, a socket's too as its poller says it is readable.
package osfile
