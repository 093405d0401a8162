"""LLM endpoints the operator configured, each with the name of the environment variable holding its key.

A server key goes only to the endpoint it was configured for (#36.1): a URL typed anywhere else (a form, a
judge option) that names no configured endpoint is sent the placeholder key ``EMPTY`` that self-hosted
servers accept, never a server key. ``LLM_ENDPOINTS`` holds a JSON list, e.g.
``[{"name": "openai", "base_url": "", "key_env": "OPENAI_API_KEY", "models": ["gpt-4o"]},
{"name": "lab-vllm", "base_url": "http://gpu1:8000/v1", "models": ["Qwen/Qwen2.5-7B-Instruct"]}]``
(``base_url`` empty: api.openai.com; no ``key_env``: no key). Without it one endpoint, ``openai``, stands
for ``LLM_BASE_URL`` (empty: api.openai.com) with ``OPENAI_API_KEY`` and ``LLM_MODEL``.
``LLM_ALLOW_CUSTOM_URL=1`` lets admins type another URL (sent without a server key).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

ENDPOINTS_VARIABLE = "LLM_ENDPOINTS"
ALLOW_CUSTOM_VARIABLE = "LLM_ALLOW_CUSTOM_URL"
NO_KEY = "EMPTY"  # vLLM and most self-hosted servers accept any key
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")


class EndpointError(ValueError):
    """The endpoint configuration is malformed, or a name or URL does not resolve; the message says which."""


class MissingKey(EndpointError):
    """The endpoint's key variable is not set."""


@dataclass(frozen=True)
class Endpoint:
    name: str  # empty: a URL typed by someone, configured by no operator
    base_url: str = ""  # empty: api.openai.com
    key_env: str = ""  # the environment variable holding its key; empty: no key is sent
    models: tuple[str, ...] = ()  # empty: any model

    @property
    def where(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        """The key to send: the configured variable's value, or ``EMPTY`` for an endpoint without one."""
        if not self.key_env:
            if not self.base_url:
                raise MissingKey("api.openai.com needs a key: configure an endpoint with key_env in LLM_ENDPOINTS")
            return NO_KEY
        value = (os.environ if environ is None else environ).get(self.key_env, "")
        if not value:
            raise MissingKey(f"endpoint {self.name or self.where} needs {self.key_env} in the server's environment")
        return value

    def allows(self, model: str) -> bool:
        return not self.models or model in self.models


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def parse_endpoints(text: str) -> tuple[Endpoint, ...]:
    """The endpoints of an ``LLM_ENDPOINTS`` value; an ``EndpointError`` names the entry and field."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise EndpointError(f"{ENDPOINTS_VARIABLE}: not JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise EndpointError(f"{ENDPOINTS_VARIABLE}: a non-empty JSON list of endpoints")
    endpoints: list[Endpoint] = []
    for number, entry in enumerate(data, start=1):
        where = f"{ENDPOINTS_VARIABLE} entry {number}"
        if not isinstance(entry, dict):
            raise EndpointError(f"{where}: an object with name, base_url, key_env, models")
        unknown = set(entry) - {"name", "base_url", "key_env", "models"}
        if unknown:
            raise EndpointError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        name, base_url = entry.get("name"), entry.get("base_url", "")
        key_env, models = entry.get("key_env", ""), entry.get("models", [])
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise EndpointError(f"{where}: name must be letters, digits, '.', '-' or '_' (at most 64)")
        if not isinstance(base_url, str) or (base_url and not re.match(r"https?://[^\s/]+", base_url)):
            raise EndpointError(f"{where} ({name}): base_url must be an http:// or https:// URL, or empty for OpenAI")
        if not isinstance(key_env, str) or (key_env and not _VARIABLE.fullmatch(key_env)):
            raise EndpointError(f"{where} ({name}): key_env must name an environment variable (e.g. OPENAI_API_KEY)")
        if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
            raise EndpointError(f"{where} ({name}): models must be a list of model names")
        if any(e.name == name for e in endpoints):
            raise EndpointError(f"{where}: the name {name} is used twice")
        endpoints.append(Endpoint(name=name, base_url=base_url, key_env=key_env, models=tuple(models)))
    return tuple(endpoints)


def configured_endpoints(environ: Mapping[str, str] | None = None) -> tuple[Endpoint, ...]:
    environ = os.environ if environ is None else environ
    if environ.get(ENDPOINTS_VARIABLE, "").strip():
        return parse_endpoints(environ[ENDPOINTS_VARIABLE])
    return (Endpoint(name="openai", base_url=environ.get("LLM_BASE_URL", ""), key_env="OPENAI_API_KEY"),)


def custom_urls_allowed(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(ALLOW_CUSTOM_VARIABLE, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


def endpoint_for(endpoints: tuple[Endpoint, ...], *, name: str = "", base_url: str = "") -> Endpoint:
    """The endpoint a run or judge uses: by name, or the configured one at ``base_url``; any other URL is
    an endpoint of its own without a key (whether it may be used at all is the caller's rule)."""
    if name:
        for endpoint in endpoints:
            if endpoint.name == name:
                return endpoint
        raise EndpointError(
            f"no endpoint named {name!r} is configured ({', '.join(e.name for e in endpoints) or 'none'})"
        )
    for endpoint in endpoints:
        if _same_url(endpoint.base_url, base_url):
            return endpoint
    if not base_url:
        raise EndpointError("no endpoint for api.openai.com is configured: name one of LLM_ENDPOINTS")
    return Endpoint(name="", base_url=base_url)


def unreachable(endpoint: Endpoint, timeout: float = 5.0) -> str:
    """Why the endpoint cannot be reached (empty when it answers at all, whatever the status): a start
    form asks before it creates a run. One GET of ``/models``, no key sent."""
    import httpx

    url = endpoint.where.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        return f"cannot reach {endpoint.where}: {type(exc).__name__}"
    return ""
