package storetest

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// SeedEnv names the environment variable that replays a random test: set
// to the seed a failed run named, the test draws the same choices again.
const SeedEnv = "LNK_TEST_SEED"

// Seed returns the seed of t's random choices: SeedEnv's value when it is
// set, else a new one. It logs the seed at once, and names it again, with
// how to replay it, if t fails.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv(SeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not a seed: %v", SeedEnv, s, err)
		}
		seed = n
	}
	t.Logf("seed %d (%s=%d replays it)", seed, SeedEnv, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with seed %d: replay with %s=%d", seed, SeedEnv, seed)
		}
	})
	return seed
}
