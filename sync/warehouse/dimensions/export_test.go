package dimensions

// EmptyListError, for the tests, is the error of a list that came back
// empty while the warehouse held live rows.
type EmptyListError = emptyListError
