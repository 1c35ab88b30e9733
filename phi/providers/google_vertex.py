"""Google Vertex AI provider for Gemini models (SPEC §7; seed 001 §5 "Google Vertex AI", REQ-121).

Same body and SSE stream as :mod:`phi.providers.google`; differences:

* endpoint ``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/
  publishers/google/models/{model}:streamGenerateContent?alt=sse`` (``global`` uses
  ``aiplatform.googleapis.com``). ``project`` / ``location`` come from ``ModelConfig.options`` or
  ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION`` (default ``us-central1``); ``base_url``
  overrides the host part (``{base_url}/projects/...``).
* auth ``Authorization: Bearer {OAuth access token}``: ``api_key`` or ``GOOGLE_VERTEX_ACCESS_TOKEN``
  / ``GOOGLE_OAUTH_ACCESS_TOKEN`` / ``CLOUDSDK_AUTH_ACCESS_TOKEN`` (e.g. from
  ``gcloud auth print-access-token``; phi does not mint tokens itself).
* generated tool ids are ``vertex-fc-{i}``; with ``options["stream_function_call_arguments"]``
  the request asks for streamed arguments (``partialArgs``), which the shared parser assembles.
"""

from __future__ import annotations

import os
from typing import Any

from .base import ErrorKind, ProviderError, StreamConfig
from .google import GeminiParser, build_body
from .http import HttpRequest, api_key, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol

TOKEN_ENV = ("GOOGLE_VERTEX_ACCESS_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN")


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    token = api_key(config.resolved_api_key() or mc.options.get("access_token"), *TOKEN_ENV,
                    what="OAuth access token")
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity", "authorization": f"Bearer {token}"}
    headers.update(mc.headers)
    body = build_body(config)
    if mc.options.get("stream_function_call_arguments") and config.tools:
        calling = body.setdefault("toolConfig", {}).setdefault("functionCallingConfig", {})
        calling["streamFunctionCallArguments"] = True
    return HttpRequest(vertex_url(mc.id, mc.base_url, mc.options), headers, json_bytes(body), (str(token),))


def vertex_url(model: str, base_url: str, options: dict[str, Any]) -> str:
    project = options.get("project") or os.environ.get("GOOGLE_CLOUD_PROJECT")
    if not project:
        raise ProviderError(ErrorKind.OTHER, "Vertex AI needs a project: set options['project'] "
                                             "or GOOGLE_CLOUD_PROJECT")
    location = options.get("location") or os.environ.get("GOOGLE_CLOUD_LOCATION") or "us-central1"
    if base_url:
        base = base_url.rstrip("/")
    elif location == "global":
        base = "https://aiplatform.googleapis.com/v1"
    else:
        base = f"https://{location}-aiplatform.googleapis.com/v1"
    return (f"{base}/projects/{project}/locations/{location}/publishers/google/models/"
            f"{model}:streamGenerateContent?alt=sse")


class GoogleVertexProvider(HttpStreamProvider):
    """Streams Gemini models hosted on Vertex AI: the Gemini protocol with Vertex's endpoint and
    OAuth auth, and ``vertex-fc-{i}`` ids for function calls that come without one."""

    protocol = WireProtocol("google_vertex", build_request, lambda builder, mc: GeminiParser(builder, "vertex-fc"),
                            idle_timeout=90.0)
