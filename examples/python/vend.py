"""Vends provider tokens from the token vending function URL, signed with
botocore's SigV4Auth (service "lambda") and botocore's default credential chain
(environment, shared config, ECS or EC2 role). Each scope given is asked for in
turn through one TokenCache, so a repeated scope is answered from the cache;
no scope: the unscoped token.

    TOKEN_VENDING_URL=https://<url-id>.lambda-url.eu-west-1.on.aws \
        python3 vend.py ba_123
"""

import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

MAX_RETRIES = 2  # of a 503 or 429
MAX_WAIT = 10  # seconds; a longer Retry-After is not waited for: the error is raised


def region_of(base_url, session):
    """The URL's own region (<url-id>.lambda-url.<region>.on.aws), else AWS_REGION: sign for the URL's."""
    host = urllib.parse.urlsplit(base_url).hostname or ""
    match = re.fullmatch(r"[^.]+\.lambda-url\.([a-z0-9-]+)\.on\.aws", host)
    return match.group(1) if match else os.environ.get("AWS_REGION") or session.get_config_variable("region")


def vend_token(base_url, scope=None, min_ttl=300, session=None):
    """The vend answer: access_token, token_type, expires_in, expires_at, scope."""
    session = session or botocore.session.get_session()
    base_url = base_url.rstrip("/")  # a stack's VendUrl output ends with "/"
    region = region_of(base_url, session)
    params = {"min_ttl": str(min_ttl)}
    if scope is not None:
        params["scope"] = scope
    # Sorted and percent-encoded, as SigV4 signs it; the URL answers any order.
    url = base_url + "/token?" + urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    for attempt in range(MAX_RETRIES + 1):
        credentials = session.get_credentials()
        if credentials is None:
            raise RuntimeError("no AWS credentials")
        request = AWSRequest(method="GET", url=url)
        SigV4Auth(credentials.get_frozen_credentials(), "lambda", region).add_auth(request)
        prepared = request.prepare()
        try:
            with urllib.request.urlopen(
                urllib.request.Request(prepared.url, headers=dict(prepared.headers), method="GET"),
                timeout=35,  # the vend function's own timeout is 30 s
            ) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            body = error.read().decode()
            # 503 and 429: retried after Retry-After (1 s, then 2 s, without one).
            retry_after = error.headers.get("Retry-After", "")
            wait = int(retry_after) if retry_after.isdigit() else attempt + 1
            if error.code in (429, 503) and attempt < MAX_RETRIES and wait <= MAX_WAIT:
                time.sleep(wait)
                continue
            # 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
            # otherwise application/problem+json {"status","code","title","detail"}.
            raise RuntimeError(f"vend answered {error.code}: {body}") from None


class TokenCache:
    """Keeps each scope's token until it has min_ttl seconds left. Make one per process."""

    def __init__(self, base_url, session=None):
        self._base_url = base_url
        self._session = session or botocore.session.get_session()
        self._tokens = {}
        self._lock = threading.Lock()

    def get(self, scope=None, min_ttl=300):
        with self._lock:  # one request at a time; the others then find the token cached
            token = self._tokens.get(scope)
            if token is None or token["expires_at"] - time.time() <= min_ttl:
                sent = time.time()
                token = vend_token(self._base_url, scope, min_ttl, self._session)
                # The earlier of its expires_at and our clock's, so a skewed clock keeps it no longer.
                token["expires_at"] = min(token["expires_at"], sent + token["expires_in"])
                self._tokens[scope] = token
            return token


def main():
    tokens = TokenCache(os.environ["TOKEN_VENDING_URL"])
    for scope in sys.argv[1:] or [None]:
        try:
            token = tokens.get(scope)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            sys.exit(1)
        # Use it as "Authorization: Bearer " + token["access_token"]; never log it.
        print(f"token_type={token['token_type']} scope={token.get('scope', '')} expires_in={token['expires_in']}")


if __name__ == "__main__":
    main()
