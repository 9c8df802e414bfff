package jsonapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// RedirectError is a redirect the client refused: one to another origin
// (scheme, host or port) than the request's, which would carry the bearer
// token or the OAuth client secret there, or, from the API client, one off
// the base URL's path (another account's, when many share a host). It is
// not retried.
type RedirectError struct {
	// From and To are origins only (scheme://host:port), with the path
	// when Reason is set.
	From, To string
	// Reason says why a redirect within the origin was refused; "" for one
	// to another origin.
	Reason string
}

func (e *RedirectError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("refusing a redirect from %s to %s: %s", e.From, e.To, e.Reason)
	}
	return fmt.Sprintf("refusing a redirect from %s to %s: credentials never leave the configured origin", e.From, e.To)
}

// sameOriginRedirects returns a copy of c that follows a redirect only within
// the origin of the first request, and otherwise the policy of c (at most 10
// redirects by default). Go's own policy drops the Authorization header only
// for another host name: it keeps it for another port, and a 307 re-posts a
// form body anywhere.
func sameOriginRedirects(c *http.Client) *http.Client {
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if from, to := origin(via[0].URL), origin(req.URL); from != to {
			return &RedirectError{From: from, To: to}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

// origin is u's scheme://host:port, with the scheme's default port made
// explicit so that https://h and https://h:443 are one origin.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + u.Hostname() + ":" + port
}
