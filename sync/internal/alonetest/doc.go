// Package alonetest checks, in tests, that a call leaves nothing of its own
// running once it returns: no page still fetched ahead, written or encoded.
// A leak shows up there rather than as a flaky failure of a later test.
//
//	alonetest.Run(t, ctx, func(ctx context.Context) {
//		_, _ = s.Run(ctx, syncer.Request{Kind: warehouse.KindFull})
//	})
package alonetest
