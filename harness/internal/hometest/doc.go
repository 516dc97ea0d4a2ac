// Package hometest makes an agent's home for tests: one that has
// something for every section of the prompt. It is for tests only.
package hometest
