"""ProviderError.classify, is_context_overflow and Retry-After parsing (DESIGN §5 "Errors")."""

from __future__ import annotations

import email.utils
import time

import pytest

from phi.providers.base import OVERFLOW_PATTERNS, ErrorKind, ProviderError, is_context_overflow, parse_retry_after

OVERFLOW_MESSAGES = [
    "prompt is too long: 213462 tokens > 200000 maximum",
    "Input is too long for requested model.",
    "Your input exceeds the context window of this model",
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
    "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
    "Please reduce the length of the messages or completion.",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens",
    "Request too large: exceeds the limit of 32768",
    "the request exceeds the available context size, try increasing it",
    "requested tokens (9000) is greater than the context length of 8192",
    "Error: context window exceeds limit",
    "exceeded model token limit: 262144",
    "context_length_exceeded",
    "Too many tokens in the request",
    "Token limit exceeded for this model",
    "model_context_window_exceeded",
    # local servers (PROV-6)
    "exceed_context_size_error",  # llama.cpp's error type, where a server puts it in the message
    "input length exceeds the context length",
    "prompt is longer than the context length",
    "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
    "However, the model is loaded with context length of only 4096 tokens, which is not enough.",
]


def test_there_are_twenty_one_overflow_phrases():
    assert len(OVERFLOW_PATTERNS) == 21
    assert len(OVERFLOW_MESSAGES) == 21


@pytest.mark.parametrize("message", OVERFLOW_MESSAGES)
def test_each_overflow_phrase_is_recognised(message):
    assert is_context_overflow(400, message)
    assert is_context_overflow(None, message.upper())  # case-insensitive
    error = ProviderError.classify(400, f'{{"error": {{"message": "{message}"}}}}')
    assert error.kind == ErrorKind.CONTEXT_OVERFLOW and error.message == message


def test_each_phrase_is_matched_by_its_own_pattern():
    import re

    for pattern, message in zip(OVERFLOW_PATTERNS, OVERFLOW_MESSAGES):
        assert re.search(pattern, message, re.IGNORECASE), (pattern, message)


@pytest.mark.parametrize("status,expected", [(400, True), (413, True), (500, False), (None, False), (429, False)])
def test_empty_body_overflow_only_for_400_and_413(status, expected):
    assert is_context_overflow(status, "") is expected
    assert is_context_overflow(status, "   \n") is expected
    assert is_context_overflow(status, None) is expected


def test_ordinary_bad_request_is_not_overflow():
    assert not is_context_overflow(400, '{"error": {"message": "invalid model"}}')
    assert ProviderError.classify(400, '{"error": {"message": "invalid model"}}').kind == ErrorKind.API


@pytest.mark.parametrize("status,kind", [
    (429, ErrorKind.RATE_LIMITED),
    (401, ErrorKind.AUTH),
    (403, ErrorKind.AUTH),
    (500, ErrorKind.NETWORK),
    (502, ErrorKind.NETWORK),
    (503, ErrorKind.NETWORK),
    (529, ErrorKind.NETWORK),
    (404, ErrorKind.API),
    (422, ErrorKind.API),
    (413, ErrorKind.CONTEXT_OVERFLOW),
])
def test_classify_by_status(status, kind):
    body = "" if status == 413 else '{"error": {"message": "x"}}'
    assert ProviderError.classify(status, body).kind == kind


def test_overflow_phrase_counts_for_4xx_but_not_5xx():
    # a 5xx stays retryable even if the text mentions tokens; a 4xx with the phrase is overflow
    assert ProviderError.classify(500, "too many tokens").kind == ErrorKind.NETWORK
    assert ProviderError.classify(422, "too many tokens").kind == ErrorKind.CONTEXT_OVERFLOW


def test_retryable_kinds():
    assert ProviderError(ErrorKind.RATE_LIMITED, "x").is_retryable()
    assert ProviderError(ErrorKind.NETWORK, "x").is_retryable()
    for kind in (ErrorKind.AUTH, ErrorKind.API, ErrorKind.CONTEXT_OVERFLOW, ErrorKind.CANCELLED, ErrorKind.OTHER):
        assert not ProviderError(kind, "x").is_retryable()
    assert ProviderError.cancelled().kind == ErrorKind.CANCELLED


def test_message_is_extracted_from_common_body_shapes():
    assert ProviderError.classify(400, '{"error": {"message": "a"}}').message == "a"
    assert ProviderError.classify(400, '[{"error": {"message": "gemini"}}]').message == "gemini"
    assert ProviderError.classify(400, '{"message": "flat"}').message == "flat"
    assert ProviderError.classify(400, '{"error": "plain"}').message == "plain"
    assert ProviderError.classify(400, "not json").message == "not json"
    assert ProviderError.classify(404, "").message == "HTTP 404"
    error = ProviderError.classify(401, '{"error": {"message": "bad key"}}')
    assert str(error) == "auth: HTTP 401: bad key"


def test_retry_after_seconds():
    error = ProviderError.classify(429, "", {"Retry-After": "3"})
    assert error.retry_after_ms == 3000 and error.retry_after() == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1500


def test_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    ms = parse_retry_after({"Retry-After": when})
    assert 28_000 <= ms <= 31_000
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after({"Retry-After": past}) == 0


def test_retry_after_ms_header_wins():
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 250
    assert parse_retry_after({"Retry-After-Ms": "oops", "Retry-After": "2"}) == 2000


def test_missing_or_garbage_retry_after():
    assert parse_retry_after(None) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert ProviderError.classify(429, "").retry_after() is None
