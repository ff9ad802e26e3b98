#!/usr/bin/env python3
"""Generates botocore-vectors.json: random S3 requests signed by botocore's own S3SigV4Auth.

The Swift signer must produce the same canonical request and Authorization header for each. The
output is committed as data; regenerate with `python3 generate_botocore_vectors.py > botocore-vectors.json`
(botocore from pip; the seed is fixed, so the same botocore gives the same file).
Credentials are AWS's documentation examples, not real ones.
"""
import datetime
import json
import random
from unittest import mock
from urllib.parse import quote

import botocore
import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ALPHABET = "abcXYZ019-._~ !'()*+,;=&$@%#?[]/" + "éሴ😀"


def random_text(rng, low, high):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(low, high)))


def main():
    rng = random.Random(16)
    vectors = []
    for index in range(40):
        method = rng.choice(["GET", "PUT", "HEAD", "DELETE", "POST"])
        key = random_text(rng, 1, 24).lstrip("/") or "k"
        bucket = rng.choice(["bucket", "my.bucket-1"])
        region = rng.choice(["us-east-1", "eu-west-3", "default"])
        scheme = rng.choice(["http", "https"])
        host = rng.choice(["s3.amazonaws.com", "127.0.0.1:7480", "rgw.example"])
        path = f"/{bucket}/{key}"
        params = {}
        for _ in range(rng.randint(0, 3)):
            params[random_text(rng, 1, 8)] = random_text(rng, 0, 8)
        headers = {}
        if rng.random() < 0.5:
            headers["Content-Type"] = rng.choice(["application/octet-stream", "text/plain;  charset=utf-8"])
        if rng.random() < 0.3:
            headers["If-None-Match"] = "*"
        if rng.random() < 0.5:
            headers["x-amz-meta-note"] = "  two   spaces\tand tab  "
        token = "FwoGZXIvYXdzEXAMPLE/token+value==" if rng.random() < 0.3 else None
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))) if method in ("PUT", "POST") else b""
        unsigned = scheme == "https" and rng.random() < 0.5
        when = datetime.datetime(2015 + index % 11, 1 + index % 12, 1 + index % 28, index % 24, index, index % 60)

        url = f"{scheme}://{host}{quote(path, safe='/-_.~')}"
        request = AWSRequest(method=method, url=url, headers=headers, data=body, params=params)
        request.context["client_config"] = mock.Mock(s3={"payload_signing_enabled": not unsigned})
        credentials = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", token)
        signer = botocore.auth.S3SigV4Auth(credentials, "s3", region)
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            prepared = request  # S3SigV4Auth signs the AWSRequest in place
            signer.add_auth(prepared)
        authorization = prepared.headers["Authorization"]
        del prepared.headers["Authorization"]
        canonical = signer.canonical_request(prepared)
        signed_names = signer.signed_headers(signer.headers_to_sign(prepared)).split(";")
        sent = {name.lower(): value for name, value in prepared.headers.items()}
        vectors.append(
            {
                "method": method,
                "path": path,
                "query": [[k, v] for k, v in params.items()],
                "headers": [[name, sent[name]] for name in signed_names if name != "host"],
                "host": host,
                "payloadHash": sent["x-amz-content-sha256"],
                "region": region,
                "sessionToken": token,
                "amzDate": when.strftime("%Y%m%dT%H%M%SZ"),
                "canonicalRequest": canonical,
                "authorization": authorization,
            }
        )
    print(json.dumps({"botocore": botocore.__version__, "vectors": vectors}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
