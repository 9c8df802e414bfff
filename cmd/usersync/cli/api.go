package cli

import (
	"fmt"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

// newAPIClient builds the API client from the configuration: a static token,
// or OAuth whose rotated refresh token lives in the warehouse's oauth_tokens.
func newAPIClient(e *env, store *warehouse.Store) (*jsonapi.Client, error) {
	if err := e.cfg.requireAPI(); err != nil {
		return nil, usageError{err}
	}
	auth := jsonapi.StaticToken(e.cfg.APIToken)
	if e.cfg.OAuthTokenURL != "" {
		o, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{
			TokenURL: e.cfg.OAuthTokenURL, ClientID: e.cfg.OAuthClientID, ClientSecret: e.cfg.OAuthClientSecret,
			RefreshToken: e.cfg.OAuthRefreshToken, Store: store.TokenStore(e.cfg.OAuthTokenURL, e.cfg.OAuthClientID),
			UserAgent: UserAgent(), Logger: e.logger,
		})
		if err != nil {
			return nil, usageError{fmt.Errorf("configuring OAuth: %w", err)}
		}
		auth = o
	}
	c, err := jsonapi.NewClient(jsonapi.Options{
		BaseURL: e.cfg.APIURL, Auth: auth, UserAgent: UserAgent(), Logger: e.logger, MaxBodyBytes: e.cfg.MaxResponseBytes, Budget: e.cfg.APIBudget,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("configuring the API client: %w", err)}
	}
	return c, nil
}
