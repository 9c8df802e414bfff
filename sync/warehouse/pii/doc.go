// Package pii keeps the personal data of a warehouse under its policy
// (USERSYNC_PII_*): it records the policies rows were written under
// (pii_policies), rewrites stored rows when the policy changes (usersync pii
// apply), erases users on request (usersync forget) and purges users deleted
// longer ago than the retention. Each row records the policy it was written
// under, so a changed policy is applied to the rows it concerns, never
// guessed from their values.
//
//	pd, err := pii.New(store, policy) // policy from normalize.NewPolicy
//	_, err = pd.NotePolicy(ctx)
//	progress, err := pd.Apply(ctx, 1000, nil)
//	erased, err := pd.Forget(ctx, []int64{42})
package pii
