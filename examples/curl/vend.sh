#!/bin/sh
# Vends a provider token from the token vending function URL with curl 7.76 or
# later, which signs with SigV4 itself (--aws-sigv4, service "lambda").
#
#   TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws \
#     AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... [AWS_SESSION_TOKEN=...] sh vend.sh ba_123
#
# Prints the answer's JSON, token included: capture it, do not display it. Exits
# non-zero on an error answer (its body on stdout).
set -eu

# curl signs the query exactly as typed: write the parameters sorted by name and
# percent-encoded. Of the characters a scope may hold, only ':' needs encoding.
query="min_ttl=300"
if [ $# -gt 0 ]; then
  query="$query&scope=$(printf '%s' "$1" | sed 's/:/%3A/g')"
fi

# Sign for the URL's own region (<url-id>.lambda-url.<region>.on.aws), else AWS_REGION.
# A stack's VendUrl output ends with "/".
url="${TOKEN_VENDING_URL%/}"
region=$(printf '%s' "$url" | sed -n 's#^https://[^./]*\.lambda-url\.\([a-z0-9-]*\)\.on\.aws$#\1#p')

# Temporary credentials (a role's) carry a session token; long-term keys do not.
set --
if [ -n "${AWS_SESSION_TOKEN:-}" ]; then
  set -- -H "x-amz-security-token: $AWS_SESSION_TOKEN"
fi

# --retry 2: a 503 or 429 (and 408, 500, 502, 504) is retried after its Retry-After.
exec curl -s --fail-with-body --max-time 35 --retry 2 \
  --aws-sigv4 "aws:amz:${region:-${AWS_REGION:-us-east-1}}:lambda" \
  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@" \
  "$url/token?$query"
