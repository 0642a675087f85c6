"""The Standard Webhooks signature: the spec's published test vector, and our headers verified by the spec's
algorithm and by the reference library's verifier."""

from __future__ import annotations

import base64
import json

import pytest
from standardwebhooks.webhooks import Webhook as ReferenceVerifier
from standardwebhooks.webhooks import WebhookVerificationError

from notify import webhooks
from tests.notify.conftest import spec_signature

# Published with the Standard Webhooks specification (and every reference library's tests).
VECTOR = {"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
          "timestamp": 1614265330, "body": '{"test": 2432232314}',
          "signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}


def test_our_signature_reproduces_the_specifications_test_vector():
    assert webhooks.sign(VECTOR["secret"], VECTOR["id"], VECTOR["timestamp"], VECTOR["body"]) == VECTOR["signature"]
    # and so does the algorithm as the spec writes it (the receiver in these tests uses it)
    assert spec_signature(VECTOR["secret"], VECTOR["id"], str(VECTOR["timestamp"]),
                          VECTOR["body"].encode()) == VECTOR["signature"]


def test_a_new_secret_is_whsec_and_24_random_bytes():
    secret = webhooks.new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 24
    assert webhooks.new_secret() != secret


def test_signed_headers_pass_the_reference_verifier_and_fail_when_the_body_changes():
    secret = webhooks.new_secret()
    body = json.dumps({"type": "round_closed", "data": {"round": 2, "task": {"name": "Sentiment ✓"}}},
                      ensure_ascii=False)
    headers = webhooks.signed_headers(secret, "msg_abc", body)
    assert headers["webhook-id"] == "msg_abc" and headers["webhook-timestamp"].isdigit()
    assert ReferenceVerifier(secret).verify(body.encode(), headers)["data"]["round"] == 2
    assert headers["webhook-signature"] == spec_signature(secret, "msg_abc", headers["webhook-timestamp"],
                                                          body.encode())
    with pytest.raises(WebhookVerificationError):
        ReferenceVerifier(secret).verify(body.replace("2", "3").encode(), headers)
    with pytest.raises(WebhookVerificationError):
        ReferenceVerifier(webhooks.new_secret()).verify(body.encode(), headers)
