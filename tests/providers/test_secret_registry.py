"""The registry of secrets phi knows of and its redaction (SPEC §17 OTEL-11): what is registered
(and what is not), the forms a secret is found in, JSON that stays JSON, the bound on what is kept,
registering from many threads, the environment read again when it changes, nothing in ``repr``,
where phi registers keys on its own, and the filter on phi's loggers."""

from __future__ import annotations

import io
import json
import logging
import secrets
import threading
from urllib.parse import quote, quote_plus

import pytest

from phi import Agent, ScriptedProvider
from phi.log import get_logger, redact_record
from phi.providers.base import StreamConfig
from phi.providers.model_config import ModelConfig
from phi.providers.secret_registry import MIN_LENGTH, SECRETS, SecretRegistry, redact, register_secret


def fresh(prefix: str = "k") -> str:
    return f"{prefix}{secrets.token_hex(10)}"


def registry(**options: object) -> SecretRegistry:
    return SecretRegistry(environ={}, **options)  # type: ignore[arg-type]


def test_values_shorter_than_eight_characters_are_not_registered() -> None:
    known = registry()
    known.register("hunter2")  # 7: an ordinary word could look like that
    known.register("  hunter22\n")  # 8 once stripped
    known.register(None)
    known.register(12345678)
    assert MIN_LENGTH == 8 and len(known) == 1
    assert known.redact("hunter2 and hunter22") == "hunter2 and ***"


def test_every_form_of_a_secret_is_replaced() -> None:
    key = "ab/cd+ef==gh\"ij\\kl"
    known = registry()
    known.register(key)
    forms = [key, json.dumps(key)[1:-1], quote(key, safe=""), quote(key), quote_plus(key), repr(key)[1:-1]]
    for form in forms:
        assert known.redact(f"<{form}>") == "<***>", form


def test_redacted_json_stays_json_and_untouched_json_is_not_encoded_again() -> None:
    key = "nEXT" + secrets.token_hex(8)  # starts with n: a text replacement after a backslash would break \n
    known = registry()
    known.register(key)
    data = {"prompt": f"line\n{key}", key: [f"x{key}", 3, None, ("tuple", key)]}
    text = json.dumps(data, ensure_ascii=False)
    encoded = known.redact_encoded(data, text, lambda d: json.dumps(d, ensure_ascii=False))[1]
    assert json.loads(encoded) == {"prompt": "line\n***", "***": ["x***", 3, None, ["tuple", "***"]]}
    assert key not in encoded and data["prompt"] == f"line\n{key}"  # the caller's data is not changed
    plain = {"nothing": "to see"}
    plain_text = json.dumps(plain)
    never = lambda d: pytest.fail("encoded again")  # noqa: E731
    again = known.redact_encoded(plain, plain_text, never)  # type: ignore[arg-type]
    assert again[0] is plain and again[1] is plain_text


def test_it_keeps_at_most_capacity_values_and_forgets_the_least_recently_used() -> None:
    known = registry(capacity=3)
    keys = [fresh() for _ in range(4)]
    for key in keys[:3]:
        known.register(key)
    known.register(keys[0])  # used again: now the most recent
    known.register(keys[3])  # one too many: keys[1] goes
    assert len(known) == 3
    assert known.redact(" ".join(keys)) == f"*** {keys[1]} *** ***"
    known.discard(keys[0])
    assert known.redact(keys[0]) == keys[0]


def test_many_threads_register_and_redact_at_once() -> None:
    known = registry(capacity=64)
    start = threading.Barrier(8)
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(300):
                key = f"thread{n:02d}-key{i:04d}"
                known.register(key)
                # known, or already forgotten for 64 newer ones from other threads: never half-replaced
                assert known.redact(f"[{key}]") in ("[***]", f"[{key}]")
        except BaseException as error:  # noqa: BLE001 — reported in the main thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(known) == 64
    after = [fresh() for _ in range(8)]
    known.register_all(after)
    assert known.redact(" ".join(after)) == " ".join(["***"] * 8) and len(known) == 64


def test_the_environments_credential_values_are_known_and_read_again_when_they_change() -> None:
    env = {"SERVICE_TOKEN": "first-token-value", "HOME": "/home/someone-long", "PASSWORD": "short"}
    known = SecretRegistry(environ=env)
    assert known.redact("first-token-value /home/someone-long short") == "*** /home/someone-long short"
    env["SERVICE_TOKEN"] = "second-token-value"  # the same number of variables, another value
    assert known.redact("first-token-value second-token-value") == "first-token-value ***"
    env["DB_PASSWORD"] = "third-secret-value"
    assert known.redact("third-secret-value") == "***"


def test_no_value_shows_in_repr_or_str() -> None:
    key = fresh()
    known = registry()
    known.register(key)
    assert key not in repr(known) and key not in str(known)
    assert repr(known) == "SecretRegistry(1 registered, 0 from the environment)"


def test_credential_headers_and_url_parts_are_registered_and_other_headers_are_not() -> None:
    token, password, query_key = fresh("tok"), fresh("pw"), fresh("q")
    known = registry()
    known.register_headers({"Authorization": f"Bearer {token}", "Accept": "application/json",
                            "X-Request-Source": "a-long-ordinary-value"})
    known.register_url(f"https://user:{password}@example.com/x?api_key={query_key}&page=100000000")
    text = f"{token} application/json a-long-ordinary-value {password} {query_key} 100000000"
    assert known.redact(text) == "*** application/json a-long-ordinary-value *** *** 100000000"


def test_phi_registers_the_keys_it_is_given_and_the_ones_it_resolves() -> None:
    from_config, from_agent, from_call, from_header = fresh("cfg"), fresh("agt"), fresh("call"), fresh("hdr")
    ModelConfig.openai("gpt-5", api_key=from_config, headers={"x-api-key": from_header})
    Agent(api_key=from_agent, provider=ScriptedProvider(["ok"]))
    StreamConfig(ModelConfig.mock(), api_key=from_call).resolved_api_key()
    for key in (from_config, from_agent, from_call, from_header):
        assert redact(f"<{key}>") == "<***>"
    register_secret(" " + (app := fresh("app")) + " ")
    assert redact(app) == "***"


def test_phis_loggers_redact_message_arguments_and_tracebacks() -> None:
    key = fresh("logged")
    SECRETS.register(key)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("phi.tests_secret_registry")
    log = get_logger("phi.tests_secret_registry")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        log.warning("calling with %s", key)
        try:
            raise ValueError(f"refused {key}")
        except ValueError:
            log.exception("the call failed")
        log.info("nothing secret in %s", "this")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert key not in text
    assert "calling with ***" in text and "ValueError: refused ***" in text and "nothing secret in this" in text
    assert redact_record in logger.filters and logger.filters.count(redact_record) == 1


def test_a_record_without_a_secret_is_left_as_it_was() -> None:
    record = logging.LogRecord("phi.x", logging.INFO, __file__, 1, "%s of %d", ("one", 2), None)
    assert redact_record(record) is True
    assert (record.msg, record.args) == ("%s of %d", ("one", 2))


def test_a_bad_format_call_keeps_no_secret_for_logging_to_report() -> None:
    key = fresh("badfmt")
    SECRETS.register(key)
    record = logging.LogRecord("phi.x", logging.ERROR, __file__, 1, "%d items of " + key, (key,), None)
    assert redact_record(record) is True  # logging reports the failed format with message and arguments
    assert key not in repr((record.msg, record.args)) and record.args == ("***",)


def test_urllib3_request_lines_are_redacted_once_a_url_secret_is_registered():
    """An MCP or provider URL with ?api_key=... : urllib3 logs the request line at DEBUG."""
    import logging

    from phi.providers.secret_registry import SECRETS

    SECRETS.register_url("http://127.0.0.1:1/mcp?api_key=URLTOKEN-0123456789")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("urllib3.connectionpool")
    handler = Keep()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug('%s://%s:%s "%s %s %s" %s %s', "http", "127.0.0.1", 1, "POST",
                     "/mcp?api_key=URLTOKEN-0123456789", "HTTP/1.1", 200, 10)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
        SECRETS.discard("URLTOKEN-0123456789")
    assert records and "URLTOKEN-0123456789" not in records[0]
