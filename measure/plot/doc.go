// Package plot draws line plots as standalone SVG documents, for the
// report `lnk measure --report` writes: a Plot is some series of values
// over the same categories, spaced evenly along the x axis (conversation
// lengths of 0, 1,000 and 100,000 events read better evenly than on any
// scale), the y axis from 0 to a round number above the largest value.
// What it writes depends only on the Plot, so it is tested against a
// golden file (go test -update rewrites it).
package plot
