// Package heldwindow holds the slices one turn holds its window in: its
// events, decoded into a slice of the process's pool or lent by the warm
// conversation, their items and their tokens. A slice comes from the pool
// and goes back emptied of what the turn wrote, so a turn does not grow a
// new one of several hundred bytes an event each time, and an idle process
// holds no event's text; a lent slice is only read.
package heldwindow
