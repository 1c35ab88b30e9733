"""SPEC §12.2 — OpenAPI 3.0/3.1 operations as agent tools (OAPI-1 to OAPI-10).

::

    import phi
    from phi.openapi import from_file, OpenApiConfig, OperationFilter, BearerAuth

    tools = from_file("petstore.yaml", OpenApiConfig(auth=BearerAuth(token)), OperationFilter.by_tag(["pets"]))
    agent = phi.Agent(model="claude-sonnet-4-5", tools=tools)

The operations are fixed once the document is read, so these are plain tools of the agent (no tool
source is needed). Each operation with an ``operationId`` becomes one tool whose arguments are the
operation's path, query and header parameters plus ``body`` for a JSON request body; calling it
sends the HTTP request and returns ``"{METHOD} {URL} → {STATUS}\\n\\n{BODY}"``.
``docs/openapi.md`` is the reference. This package is imported only when used (``import phi`` does
not load it).
"""

from __future__ import annotations

from .config import (
    ApiKeyAuth,
    BasicAuth,
    BearerAuth,
    OpenApiAuth,
    OpenApiConfig,
    OpenApiError,
    OperationFilter,
)
from .loader import from_file, from_str, from_url
from .tool import OpenApiTool

__all__ = [
    "from_str",
    "from_file",
    "from_url",
    "OpenApiConfig",
    "OperationFilter",
    "OpenApiAuth",
    "BearerAuth",
    "ApiKeyAuth",
    "BasicAuth",
    "OpenApiError",
    "OpenApiTool",
]
