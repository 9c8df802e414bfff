// Package loadtest gives the warehouse packages' tests the protocol stores
// on a test's schema (see warehousetest) and a dimension load in one call.
// It is apart from warehousetest so that the users and dimensions packages'
// own internal tests can use warehousetest without an import cycle.
//
//	store := warehousetest.NewStore(t)
//	us := loadtest.Users(t, store)
//	ds := loadtest.Dimensions(t, store)
package loadtest
