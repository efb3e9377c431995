#!/bin/sh
# Vends a provider token from the token vending function URL with curl 7.75 or
# later, which signs with SigV4 itself (--aws-sigv4, service "lambda").
#
#   TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws AWS_REGION=eu-west-1 \
#     AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... [AWS_SESSION_TOKEN=...] sh vend.sh ba_123
#
# Prints the answer's JSON; exits non-zero on an error answer (its body on stdout).
set -eu

# curl signs the query exactly as typed: write the parameters sorted by name and
# percent-encoded. Of the characters a scope may hold, only ':' needs encoding.
query="min_ttl=300"
if [ $# -gt 0 ]; then
  query="$query&scope=$(printf '%s' "$1" | sed 's/:/%3A/g')"
fi

# Temporary credentials (a role's) carry a session token; long-term keys do not.
set --
if [ -n "${AWS_SESSION_TOKEN:-}" ]; then
  set -- -H "x-amz-security-token: $AWS_SESSION_TOKEN"
fi

exec curl -s --fail-with-body \
  --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:lambda" \
  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@" \
  "$TOKEN_VENDING_URL/token?$query"
