package apisim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// token is the keyset cursor carried by page[after], shaped like the real
// service's (a base64 JSON object naming the controller, the sort, the sort
// values of the last row and its id).
type token struct {
	CN string `json:"cn"`
	SP string `json:"sp"`
	SV []any  `json:"sv"`
	ID int64  `json:"id"`
	V  int    `json:"v"`
}

// encodeToken returns the page[after] value that resumes after the row
// (keys, id) of q's sort order.
func encodeToken(q *query, keys []key, id uint32) string {
	tok := token{CN: q.t.controller, SP: q.sortParam, ID: int64(id), V: 1}
	for _, k := range keys {
		switch {
		case k.null:
			tok.SV = append(tok.SV, nil)
		case k.kind == fkTime:
			tok.SV = append(tok.SV, formatMillis(k.n))
		case k.kind == fkString:
			tok.SV = append(tok.SV, k.s)
		case k.kind == fkBool:
			tok.SV = append(tok.SV, k.n == 1)
		default:
			tok.SV = append(tok.SV, k.n)
		}
	}
	b, err := json.Marshal(tok)
	if err != nil {
		panic("apisim: encoding a cursor: " + err.Error()) // programmer error: plain values only
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(v string) (*token, error) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		if raw, err = base64.StdEncoding.DecodeString(v); err != nil {
			return nil, fmt.Errorf("decoding cursor: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tok token
	if err := dec.Decode(&tok); err != nil {
		return nil, fmt.Errorf("decoding cursor: %w", err)
	}
	if tok.V != 1 || tok.SP == "" {
		return nil, errors.New("decoding cursor: unknown version")
	}
	return &tok, nil
}

// afterKeys converts the cursor's sort values to keys of q's sort fields.
func (q *query) afterKeys() ([]key, bool) {
	if len(q.after.SV) != len(q.sorts) {
		return nil, false
	}
	keys := make([]key, len(q.sorts))
	for i, sk := range q.sorts {
		k := key{kind: sk.f.kind}
		switch v := q.after.SV[i].(type) {
		case nil:
			k.null = true
		case string:
			var ok bool
			if k, ok = parseKey(sk.f, v); !ok || sk.f.kind == fkInt || sk.f.kind == fkBool {
				return nil, false
			}
		case json.Number:
			n, err := v.Int64()
			if err != nil || sk.f.kind != fkInt {
				return nil, false
			}
			k.n = n
		case bool:
			if sk.f.kind != fkBool {
				return nil, false
			}
			k.n = int64(boolInt(v))
		default:
			return nil, false
		}
		keys[i] = k
	}
	return keys, true
}

// baseURL is scheme://host of the links the simulator sends (Options.BaseURL,
// or what the request was addressed to), followed by the account's path
// prefix in a Fleet, so that every link stays under the account.
func (s *Server) baseURL(r *http.Request) string {
	return s.origin(r) + s.prefix
}

func (s *Server) origin(r *http.Request) string {
	if s.opts.BaseURL != "" {
		return strings.TrimSuffix(s.opts.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

// pageLink returns the absolute URL of the request with its position
// parameters (page[after], page[offset]) replaced by extra. Every other
// parameter is kept byte for byte, so links.next carries the original filter,
// sort, fields and page[size].
func pageLink(base, path, rawQuery, extra string) string {
	var b strings.Builder
	b.WriteString(base)
	b.WriteString(path)
	sep := byte('?')
	for _, part := range strings.Split(rawQuery, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		if un, err := url.QueryUnescape(name); err == nil && (un == "page[after]" || un == "page[offset]") {
			continue
		}
		b.WriteByte(sep)
		b.WriteString(part)
		sep = '&'
	}
	if extra != "" {
		b.WriteByte(sep)
		b.WriteString(extra)
	}
	return b.String()
}

func afterParam(tok string) string { return "page[after]=" + tok }

func offsetParam(n int) string { return "page[offset]=" + strconv.Itoa(n) }
