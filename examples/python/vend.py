"""Vends a provider token from the token vending function URL, signed with
botocore's SigV4Auth (service "lambda") and botocore's default credential chain
(environment, shared config, ECS or EC2 role).

    TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws AWS_REGION=eu-west-1 \
        python3 vend.py ba_123
"""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest


def vend_token(base_url, scope=None, min_ttl=300, session=None):
    """The vend answer: access_token, token_type, expires_in, expires_at, scope."""
    session = session or botocore.session.get_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise RuntimeError("no AWS credentials")
    region = os.environ.get("AWS_REGION") or session.get_config_variable("region")
    params = {"min_ttl": str(min_ttl)}
    if scope is not None:
        params["scope"] = scope
    # Sorted and percent-encoded, as SigV4 signs it; the URL answers any order.
    url = base_url + "/token?" + urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    request = AWSRequest(method="GET", url=url)
    SigV4Auth(credentials.get_frozen_credentials(), "lambda", region).add_auth(request)
    prepared = request.prepare()
    try:
        with urllib.request.urlopen(
            urllib.request.Request(prepared.url, headers=dict(prepared.headers), method="GET"),
            timeout=10,
        ) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        # 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
        # otherwise application/problem+json {"status","code","title","detail"}.
        raise RuntimeError(f"vend answered {error.code}: {error.read().decode()}") from None


def main():
    scope = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        token = vend_token(os.environ["TOKEN_VENDING_URL"], scope)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        sys.exit(1)
    # Use it as "Authorization: Bearer " + token["access_token"]; never log it.
    print(f"token_type={token['token_type']} scope={token.get('scope', '')} expires_in={token['expires_in']}")


if __name__ == "__main__":
    main()
