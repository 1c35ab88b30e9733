"""SPEC §7 — LLM providers. Importing this package is cheap: protocol modules (and ``requests``)
load only when a provider is used, through :mod:`phi.providers.registry`."""
