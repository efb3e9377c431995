// Vends provider tokens from the token vending function URL, signed with
// aws-sdk-go-v2's SigV4 signer (service "lambda") and the default credential
// chain (environment, shared config, ECS or EC2 role). Each scope given is asked
// for in turn through one TokenCache, so a repeated scope is answered from the
// cache; no scope: the unscoped token.
//
//	TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws go run . ba_123
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Token is the vend answer; Scope is empty for the unscoped token.
type Token struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	ExpiresAt   int64  `json:"expires_at"`
	Scope       string `json:"scope,omitempty"`
}

const (
	maxRetries = 2                // of a 503 or 429
	maxWait    = 10 * time.Second // a longer Retry-After is not waited for: the error is returned
)

// httpClient gives up on an answer after 35 s: the vend function's own timeout is 30 s.
var httpClient = &http.Client{Timeout: 35 * time.Second}

// emptyBodyHash is the SHA-256 of the empty GET body, which SigV4 signs.
var emptyBodyHash = func() string { h := sha256.Sum256(nil); return hex.EncodeToString(h[:]) }()

var urlHost = regexp.MustCompile(`^[^.]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$`)

// regionOf is the URL's own region (<url-id>.lambda-url.<region>.on.aws), else
// the configured one (AWS_REGION): sign for the URL's region.
func regionOf(u *url.URL, cfg aws.Config) string {
	if m := urlHost.FindStringSubmatch(u.Hostname()); m != nil {
		return m[1]
	}
	return cfg.Region
}

// VendToken asks for a token for scope ("" for the unscoped one) with at least minTTL seconds left.
func VendToken(ctx context.Context, baseURL, scope string, minTTL int, cfg aws.Config) (*Token, error) {
	query := url.Values{"min_ttl": {fmt.Sprint(minTTL)}}
	if scope != "" {
		query.Set("scope", scope)
	}
	// A stack's VendUrl output ends with "/".
	target, err := url.Parse(strings.TrimRight(baseURL, "/") + "/token?" + query.Encode())
	if err != nil {
		return nil, err
	}
	region := regionOf(target, cfg)
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return nil, err
		}
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return nil, fmt.Errorf("no AWS credentials: %w", err)
		}
		// The signer also rewrites the query into its canonical form, the one it signs.
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptyBodyHash, "lambda", region, time.Now()); err != nil {
			return nil, err
		}
		res, err := httpClient.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if res.StatusCode == http.StatusOK {
			var token Token
			if err := json.Unmarshal(body, &token); err != nil {
				return nil, err
			}
			return &token, nil
		}
		// 503 and 429: retried after Retry-After (1 s, then 2 s, without one).
		wait := time.Duration(attempt+1) * time.Second
		if seconds, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && seconds >= 0 {
			wait = time.Duration(seconds) * time.Second
		}
		retriable := res.StatusCode == http.StatusServiceUnavailable || res.StatusCode == http.StatusTooManyRequests
		if !retriable || attempt == maxRetries || wait > maxWait {
			// 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
			// otherwise application/problem+json {"status","code","title","detail"}.
			return nil, fmt.Errorf("vend answered %d: %s", res.StatusCode, body)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// TokenCache keeps each scope's token until it has minTTL seconds left. Make one per process.
type TokenCache struct {
	BaseURL string
	Config  aws.Config
	mu      sync.Mutex // one request at a time; the others then find the token cached
	tokens  map[string]*Token
}

// Get is VendToken through the cache.
func (c *TokenCache) Get(ctx context.Context, scope string, minTTL int) (*Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token := c.tokens[scope]; token != nil && token.ExpiresAt-time.Now().Unix() > int64(minTTL) {
		return token, nil
	}
	sent := time.Now().Unix()
	token, err := VendToken(ctx, c.BaseURL, scope, minTTL, c.Config)
	if err != nil {
		return nil, err
	}
	// The earlier of its expires_at and our clock's, so a skewed clock keeps it no longer.
	if local := sent + token.ExpiresIn; local < token.ExpiresAt {
		token.ExpiresAt = local
	}
	if c.tokens == nil {
		c.tokens = map[string]*Token{}
	}
	c.tokens[scope] = token
	return token, nil
}

func main() {
	scopes := os.Args[1:]
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tokens := &TokenCache{BaseURL: os.Getenv("TOKEN_VENDING_URL"), Config: cfg}
	for _, scope := range scopes {
		token, err := tokens.Get(ctx, scope, 300)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// Use it as "Authorization: Bearer " + token.AccessToken; never log it.
		fmt.Printf("token_type=%s scope=%s expires_in=%d\n", token.TokenType, token.Scope, token.ExpiresIn)
	}
}
