// Package syncertest holds test helpers shared by the packages that run
// syncs: comparing a warehouse with the simulator's ground truth, so every
// scenario test checks the mirror the same way.
//
//	sim := apisim.New(apisim.Options{Seed: 1, Users: 300})
//	// ... sync sim into store ...
//	syncertest.AssertMirrors(t, sim, store)
package syncertest
