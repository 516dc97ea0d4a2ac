// Package golden holds a test's expected bytes in a file under testdata/:
// a request body, a prompt, a page, kept byte for byte so a change to them
// shows in review. Check compares what a test made with the file, or, when
// the test was run with its package's -update flag, writes the file from
// it. It is for tests only.
package golden
