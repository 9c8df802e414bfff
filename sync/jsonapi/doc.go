// Package jsonapi is the HTTP client of the JSON:API that usersync mirrors
// ({base}/api/v2/users, /teams, /roles, /profiles). It walks collections by
// following links.next verbatim, and it keeps going through what a long walk
// meets (5xx, network errors, truncated bodies, 429s) so that a sync fails
// only on what retrying cannot fix.
//
// Responses decode with sync/jsondoc, attributes kept as raw JSON so nothing
// the API adds is lost. Authentication is a static bearer token or the OAuth
// refresh-token grant, each rotated refresh token persisted through a
// TokenStore. Retries back off with jitter, a 502 or 504 halves page[size],
// and a low rate-limit budget slows the client down. Every other failure is
// a typed error (*ResponseError, *RateLimitError, *AuthError,
// *jsondoc.DecodeError, *NextLinkError, *QueryError, *TransportError,
// *UnreachableError); URLs in errors are sanitized, and tokens never appear
// in errors or logs.
//
// # Usage
//
//	c, err := jsonapi.NewClient(jsonapi.Options{
//		BaseURL:   "https://api.example.com",
//		Auth:      jsonapi.StaticToken(token),
//		UserAgent: "usersync/0.1.0",
//		Logger:    logger,
//	})
//	if err != nil {
//		return err
//	}
//	q := jsonapi.Query{}.
//		Filter("updatedAt", jsonapi.Range(watermark, time.Time{})). // watermark..inf
//		Sort("updatedAt").
//		PageSize(1000)
//	it := c.Collection("users", q) // or c.Resume(checkpointedNextURL)
//	for {
//		page, err := it.Next(ctx)
//		if err != nil {
//			return fmt.Errorf("syncing users: %w", err)
//		}
//		if page == nil {
//			break // no more pages
//		}
//		for _, r := range page.Data {
//			_ = r.ID            // int64-based ID
//			_ = r.Attributes    // raw JSON object
//			role, ok := r.Relationships["role"].Data.One()
//			_, _ = role, ok
//		}
//		cp, err := c.CheckpointURL("users", page.NextURL) // "" after the last page
//		if err != nil {
//			return fmt.Errorf("checkpointing: %w", err)
//		}
//		checkpoint(cp) // the cursor and the client's own parameters only
//	}
//	stats := c.Stats() // requests, by status, 429s, retries, bytes, rate limit
//
// To fetch page N+1 while page N is written, read from Prefetch instead. A
// walk cut short (a failed fetch, a cancelled context) ends the loop with
// an error, never as if it had reached its last page; leaving the loop
// stops the fetching goroutine:
//
//	for page, err := range jsonapi.Prefetch(ctx, it, 1).Pages() {
//		if err != nil {
//			return err
//		}
//		write(page)
//	}
//
// With OAuth, build the Authenticator first:
//
//	auth, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{
//		TokenURL:     "https://api.example.com/oauth/token",
//		ClientID:     id,
//		ClientSecret: secret,
//		RefreshToken: configuredRefreshToken,
//		Store:        store, // keeps the rotated refresh token
//	})
//
// A *RateLimitError means the API asked for a wait longer than
// Options.MaxRateLimitWait: stop and try again after its RetryAfter.
package jsonapi
