package testenv

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the environment variable that fixes the seed of Rand, to
// replay a failure: RUNRTEST_SEED=1234 go test -run 'TestX$' ./tests
const SeedEnv = "RUNRTEST_SEED"

// Rand returns a generator for t, seeded from $RUNRTEST_SEED or else the
// clock. The seed is logged at once, so a failing test's output carries it.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q is not a seed (an unsigned integer)", SeedEnv, s)
		}
		seed = n
	}
	t.Logf("random seed %d; replay with %s=%d go test -run '^%s$'", seed, SeedEnv, seed, t.Name())
	return rand.New(rand.NewPCG(seed, seed))
}
