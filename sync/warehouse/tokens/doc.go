// Package tokens keeps a deployment's OAuth credential in its warehouse
// schema (oauth_tokens): the rotated refresh token, so that it survives
// restarts and every replica shares it, and the current access token with
// its expiry. The OAuth client keeps its tokens there
// (jsonapi.OAuthConfig.Store).
//
//	ts, err := tokens.New(pool, "usersync", tokenURL, clientID)
//	ts = ts.WithKey(key) // seal both tokens (package secret); nil: plain text
//	refresh, err := ts.Load(ctx)
//	err = ts.Save(ctx, rotated)
package tokens
