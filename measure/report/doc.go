// Package report is what `lnk measure` found and how it is told: Result,
// the JSON `lnk measure --json` writes (version ResultVersion), with a Case
// for each count of agents and length of conversation, each agent's
// AgentCost, the processes' Total, and what one more agent and one more
// message cost in each Layout (Marginal, the slope of the processes'
// memory against the count of agents); MedianOf, TotalOf and Marginals
// read those figures from the agents' own.
//
// For people, WriteTable writes a Result at most Width columns wide, each
// table's columns told in a line each beneath it, and WriteReport writes
// a folder: report.md with two plots (measure/plot), result.json and
// result.txt.
package report
