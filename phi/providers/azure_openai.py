"""Azure OpenAI provider: the Responses API on an Azure resource (SPEC §7; seed 001 §5
"Azure OpenAI", REQ-124).

Same request body and event stream as :mod:`phi.providers.openai_responses`; differences are the
endpoint, auth and model naming:

* ``base_url`` ``https://{resource}.openai.azure.com/openai/v1`` (the v1 API, no ``api-version``),
  or a legacy ``…/openai`` / ``…/openai/deployments/{deployment}`` base, to which
  ``?api-version={options["api_version"]}`` (default ``2025-04-01-preview``) is added. Without a
  base URL, ``options["resource"]`` or ``AZURE_OPENAI_ENDPOINT`` is used.
* auth: ``api-key: {key}`` (``AZURE_OPENAI_API_KEY``), or ``Authorization: Bearer`` with an Entra
  token when ``options["auth"] == "entra"`` (token in ``api_key`` or ``AZURE_OPENAI_AD_TOKEN``).
* ``model`` is the deployment name: ``options["deployment"]``, else ``ModelConfig.id``.
"""

from __future__ import annotations

import os
from typing import Any

from .base import ErrorKind, ProviderError, StreamConfig
from .http import HttpRequest, api_key, join_url, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol
from .openai_responses import ResponsesParser, build_body

DEFAULT_API_VERSION = "2025-04-01-preview"


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    entra = mc.options.get("auth") == "entra"
    if entra:
        key = api_key(config.resolved_api_key(), "AZURE_OPENAI_AD_TOKEN", what="Entra token")
        auth = {"authorization": f"Bearer {key}"}
    else:
        key = api_key(config.resolved_api_key(), "AZURE_OPENAI_API_KEY")
        auth = {"api-key": str(key)}
    headers = {"content-type": "application/json", "accept": "text/event-stream", "accept-encoding": "identity"}
    headers.update(auth)
    headers.update(mc.headers)
    deployment = mc.options.get("deployment") or mc.id
    body = build_body(config, model=deployment)
    return HttpRequest(responses_url(mc.base_url, mc.options), headers, json_bytes(body), (str(key),))


def responses_url(base_url: str, options: dict[str, Any]) -> str:
    """The Responses endpoint for an Azure base URL (see the module docstring)."""
    base = base_url or _base_from_environment(options)
    base = base.rstrip("/")
    if base.endswith("/openai/v1"):
        return join_url(base, "responses")
    if "/openai" not in base:
        base = base + "/openai"
    version = options.get("api_version") or DEFAULT_API_VERSION
    return f"{join_url(base, 'responses')}?api-version={version}"


def _base_from_environment(options: dict[str, Any]) -> str:
    resource = options.get("resource")
    if resource:
        return f"https://{resource}.openai.azure.com/openai/v1"
    endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT") or os.environ.get("AZURE_OPENAI_BASE_URL")
    if endpoint:
        endpoint = endpoint.rstrip("/")
        return endpoint if "/openai" in endpoint else endpoint + "/openai/v1"
    raise ProviderError(ErrorKind.OTHER, "Azure OpenAI needs an endpoint: set ModelConfig.base_url, "
                                         "options['resource'], or AZURE_OPENAI_ENDPOINT")


class AzureOpenAIProvider(HttpStreamProvider):
    """Streams Azure OpenAI deployments over the Responses API: the OpenAI Responses protocol with
    Azure's endpoint, auth and deployment names (replies name the service ``openai`` when
    ``ModelConfig.provider`` is empty, as OpenAI Responses replies do)."""

    protocol = WireProtocol("azure_openai", build_request, lambda builder, mc: ResponsesParser(builder),
                            service="openai")
