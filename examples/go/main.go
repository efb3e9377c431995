// Vends a provider token from the token vending function URL, signed with
// aws-sdk-go-v2's SigV4 signer (service "lambda") and the default credential
// chain (environment, shared config, ECS or EC2 role).
//
//	TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws AWS_REGION=eu-west-1 go run . ba_123
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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Token is the vend answer; Scope is empty for the unscoped token.
type Token struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	ExpiresAt   int64  `json:"expires_at"`
	Scope       string `json:"scope,omitempty"`
}

// emptyBodyHash is the SHA-256 of the empty GET body, which SigV4 signs.
var emptyBodyHash = func() string { h := sha256.Sum256(nil); return hex.EncodeToString(h[:]) }()

// VendToken asks for a token for scope ("" for the unscoped one) with at least minTTL seconds left.
func VendToken(ctx context.Context, baseURL, scope string, minTTL int, cfg aws.Config) (*Token, error) {
	query := url.Values{"min_ttl": {fmt.Sprint(minTTL)}}
	if scope != "" {
		query.Set("scope", scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/token?"+query.Encode(), nil)
	if err != nil {
		return nil, err
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("no AWS credentials: %w", err)
	}
	// The signer also rewrites the query into its canonical form, the one it signs.
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptyBodyHash, "lambda", cfg.Region, time.Now()); err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		// 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
		// otherwise application/problem+json {"status","code","title","detail"}.
		return nil, fmt.Errorf("vend answered %d: %s", res.StatusCode, body)
	}
	var token Token
	if err := json.Unmarshal(body, &token); err != nil {
		return nil, err
	}
	return &token, nil
}

func main() {
	scope := ""
	if len(os.Args) > 1 {
		scope = os.Args[1]
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	token, err := VendToken(ctx, os.Getenv("TOKEN_VENDING_URL"), scope, 300, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Use it as "Authorization: Bearer " + token.AccessToken; never log it.
	fmt.Printf("token_type=%s scope=%s expires_in=%d\n", token.TokenType, token.Scope, token.ExpiresIn)
}
