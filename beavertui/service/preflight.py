"""Checks made before a command that runs sessions writes anything: ``live``, ``batch`` (``--dry-run`` too).

In order, and the first that fails is the one said (one line naming the fix; the CLI exits 2):

1. every endpoint model has its key: the variable its entry names (``api_key_env``, default
   ``OPENAI_API_KEY``) is set, or a base URL names a server of its own (vLLM, Ollama need no key);
2. each endpoint in turn: its base URL is one (http:// or https://, a host, no route such as /chat/completions
   appended), and it answers and serves the model: ``GET /models`` where the server has it (a server
   without that route, or one that answers it with nonsense, is taken as reachable, unless ``BASE/v1``
   lists models: a base URL that left out /v1; an HTML page there, a web UI, is not the API); a refused connection, an unknown host or a refused key
   fails;
3. the toolchain can run: for ``local``, a visible NVIDIA GPU, nvcc, and compute-sanitizer where the
   protocols ask for it; a recorded toolchain (``recorded:PATH``, ``demo``) needs none of these.

Which tasks are usable on this GPU is the corpus validation's verdict, applied where the tasks are chosen
(``service/batch.py``, ``commands/live.py``), also before anything is written. Nothing here reads or
shows a key's value beyond sending it to the endpoint it belongs to.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from beavertui.engine.errors import NoGpuError, PreflightError
from beavertui.engine.models.openai_model import OpenAIConfig, shared_tls_context

#: Seconds the model list may take before the endpoint counts as unreachable.
LIST_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Endpoint:
    """One endpoint model to check: its name in the run, and its configuration as sent."""

    label: str
    config: OpenAIConfig


def is_endpoint(name: str) -> bool:
    """Whether a model name means an OpenAI-compatible endpoint (not scripted, replayed or a human)."""
    return not (name.startswith(("scripted:", "replay:")) or name == "human")


def base_url_of(config: OpenAIConfig) -> str | None:
    """The base URL a call goes to: the configuration's, else ``$OPENAI_BASE_URL``; None: the OpenAI API."""
    return config.base_url or os.environ.get("OPENAI_BASE_URL") or None


def key_problem(endpoint: Endpoint) -> str | None:
    """Why ``endpoint`` has no key, or None."""
    config = endpoint.config
    if os.environ.get(config.api_key_env) or base_url_of(config) is not None:
        return None
    named = "" if config.api_key_env == "OPENAI_API_KEY" else " (the variable its api_key_env names)"
    return (
        f"no API key for model {endpoint.label}: set {config.api_key_env}{named}, or give --base-url URL "
        "(or OPENAI_BASE_URL) for a local OpenAI-compatible server"
    )


def endpoint_problem(endpoint: Endpoint, served: dict[tuple[str | None, str], Any]) -> str | None:
    """Why ``endpoint`` cannot be used (unreachable, key refused, model not served), or None.

    ``served`` caches the model list of each (base URL, key variable) so that one server is asked once.
    """
    import openai

    config = endpoint.config
    base = base_url_of(config)
    where = base or "the OpenAI API"
    if base is not None and (why := _malformed_base(base)) is not None:
        return why
    slot = (base, config.api_key_env)
    if slot not in served:
        key = os.environ.get(config.api_key_env) or "none"
        http = openai.DefaultHttpxClient(verify=shared_tls_context(), timeout=LIST_TIMEOUT_S)
        client = openai.OpenAI(
            api_key=key, base_url=base, timeout=LIST_TIMEOUT_S, max_retries=0, http_client=http
        )
        try:
            raw = client.models.with_raw_response.list()
            if "html" in (raw.headers.get("content-type") or "").lower():
                served[slot] = _web_page(where)  # a web UI's page, where the API was meant
            else:
                served[slot] = sorted(m.id for m in raw.parse())
        except openai.NotFoundError:
            served[slot] = _without_v1(base, key)  # no such route: a base URL that left out /v1?
        except openai.AuthenticationError as exc:
            served[slot] = _refused(where, config.api_key_env, exc.status_code)
        except openai.PermissionDeniedError as exc:
            served[slot] = _refused(where, config.api_key_env, exc.status_code)
        except openai.APIConnectionError as exc:
            served[slot] = _unreachable(exc, where)
        except (openai.APIError, ValueError, TypeError, AttributeError):
            served[slot] = None  # it answers, but lists no models (no such route, or not as OpenAI does)
    found = served[slot]
    if isinstance(found, str):
        return found
    if found is None or config.model in found:
        return None
    if ":" not in config.model and f"{config.model}:latest" in found:
        return None  # Ollama lists a model pulled without a tag as NAME:latest and serves it as NAME too
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return (
        f"{where} does not serve model {config.model!r} (it serves: {shown or 'none'}): fix the model "
        "name, or --base-url"
    )


def open_without_key(base: str) -> bool:
    """Whether the server at ``base`` lists its models to a caller with no key (the ``none`` a model without
    its key variable sends): a local server started without one, whose calls need none either."""
    import openai

    http = openai.DefaultHttpxClient(verify=shared_tls_context(), timeout=LIST_TIMEOUT_S)
    client = openai.OpenAI(
        api_key="none", base_url=base, timeout=LIST_TIMEOUT_S, max_retries=0, http_client=http
    )
    try:
        client.models.list()
    except (openai.APIError, ValueError, TypeError, AttributeError):
        return False
    return True


def _malformed_base(base: str) -> str | None:
    """Why ``base`` cannot be a base URL (no http:// or https://, no host, a route of the API appended), or None.
    Each of these passed the model-list check before and failed every call of the run."""
    from urllib.parse import urlsplit

    parts = urlsplit(base.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        fixed = "http://" + base.strip().split("://", 1)[-1]
        return (
            f"base URL {base!r} is not an http:// or https:// URL with a host: give it whole, e.g. "
            f"--base-url {fixed} (or OPENAI_BASE_URL, or the models file's base_url)"
        )
    path = parts.path.rstrip("/")
    for route in ("/chat/completions", "/completions", "/models"):
        if path.endswith(route):
            fixed = base.strip().rstrip("/").removesuffix(route)
            return (
                f"base URL {base!r} ends in the route {route}, which each call adds itself: give the part "
                f"before it, --base-url {fixed} (or OPENAI_BASE_URL, or the models file's base_url)"
            )
    return None


def _without_v1(base: str | None, key: str) -> str | None:
    """The problem of a base URL whose ``/models`` is not there while ``BASE/v1/models`` lists models (vLLM and
    Ollama serve the API under /v1: ``http://localhost:8000`` for ``http://localhost:8000/v1``), or None: a
    server without the route, taken as there."""
    import openai

    if base is None or base.rstrip("/").endswith("/v1"):
        return None
    fixed = base.rstrip("/") + "/v1"
    http = openai.DefaultHttpxClient(verify=shared_tls_context(), timeout=LIST_TIMEOUT_S)
    client = openai.OpenAI(
        api_key=key, base_url=fixed, timeout=LIST_TIMEOUT_S, max_retries=0, http_client=http
    )
    try:
        found = sorted(m.id for m in client.models.list())
    except (openai.APIError, ValueError, TypeError, AttributeError):
        return None
    return (
        f"{base} has no /models route, but {fixed} lists models ({', '.join(found[:3]) or 'none'}"
        f"{' ...' if len(found) > 3 else ''}): the OpenAI API is under /v1 there, so give --base-url {fixed} "
        "(or set OPENAI_BASE_URL, or the models file's base_url, to it)"
    )


def _web_page(where: str) -> str:
    """The problem of a base URL whose ``/models`` is an HTML page: a web UI or a site, not the OpenAI API (every
    call would fail, said as a malformed stream)."""
    return (
        f"{where} answers GET /models with an HTML page, not the OpenAI API: give the API's base URL (vLLM: "
        "http://HOST:8000/v1, Ollama: http://HOST:11434/v1) with --base-url or OPENAI_BASE_URL"
    )


def _refused(where: str, variable: str, status: int) -> str:
    """The problem of a server that answered 401 or 403: a key it refused, or none sent at all."""
    if not os.environ.get(variable):
        return (
            f"{where} asks for an API key (HTTP {status}) and {variable} is not set: set {variable} to its key "
            "(or name another variable with --api-key-env VAR)"
        )
    return (
        f"{where} refused the key in {variable} (HTTP {status}): set {variable} to a key this server accepts"
    )


def _unreachable(exc: Exception, where: str) -> str | None:
    """The problem of a failed connection, or None when the server was reached and broke off its answer.

    The HTTP client's exceptions are told by name (``ConnectError``, ``ConnectTimeout``), which every
    release of the client the SDK is built on keeps."""
    cause = exc.__cause__
    kind = type(cause).__name__ if cause is not None else ""
    if kind == "ConnectTimeout":
        return f"cannot reach {where}: no connection within {LIST_TIMEOUT_S:g} s: check --base-url"
    if kind == "ConnectError":
        why = " ".join(str(cause).split()) or kind
        return f"cannot reach {where} ({why}): start the server, or fix --base-url / OPENAI_BASE_URL"
    return None  # a server that hung up on GET /models or took long to list: it is there


def sanitizer_present() -> bool:
    """compute-sanitizer on PATH, or in the CUDA toolkit's folder."""
    if shutil.which("compute-sanitizer"):
        return True
    from beavertui.engine.host.gpu import cuda_root

    root = cuda_root()
    return root is not None and any(
        (root / sub).is_file() for sub in ("bin/compute-sanitizer", "compute-sanitizer/compute-sanitizer")
    )


def toolchain_problem(toolchain: str, protocols: Iterable[Any], gpus: str | None = None) -> str | None:
    """Why ``toolchain`` cannot run here (no GPU, no nvcc, no compute-sanitizer where asked for), or None.

    ``gpus``: GPU indices named by the user (``batch --gpus``), taken as there without asking nvidia-smi
    (compute-sanitizer is then looked for only where nvidia-smi sees a GPU)."""
    from beavertui.engine.host.gpu import probe
    from beavertui.engine.toolchain.resolve import NO_GPU, NO_GPU_TOOLCHAIN, parse_toolchain

    kind, path = parse_toolchain(toolchain)
    if kind != "local":
        if path is not None and not os.path.lexists(path):  # said before a run writes anything
            return f"{path}: no such recordings file or session folder"
        return None
    machine = probe()
    if machine.gpu is None and not gpus:
        return NO_GPU + NO_GPU_TOOLCHAIN
    if machine.nvcc is None:
        return "nvcc is not on PATH: install the CUDA toolkit (or add its bin/ to PATH)"
    wants = any(p.sanitize_on_failure or p.sanitize_tools for p in protocols)
    if wants and machine.gpu is not None and not sanitizer_present():
        return (
            "compute-sanitizer is not on PATH, and the protocol runs it: install the CUDA toolkit's "
            "compute-sanitizer (or add its folder to PATH)"
        )
    return None


def preflight(
    endpoints: Sequence[Endpoint],
    toolchain: str,
    protocols: Iterable[Any],
    gpus: str | None = None,
    here: bool = True,
) -> None:
    """Raise PreflightError with the first problem (keys, then endpoints, then the toolchain; ``here`` False:
    the toolchain runs elsewhere, on Ray's workers, and this machine's is not checked)."""
    for e in endpoints:
        if (why := key_problem(e)) is not None:
            raise PreflightError(why)
    served: dict[tuple[str | None, str], Any] = {}
    several = len({e.label for e in endpoints}) > 1
    for e in endpoints:
        if (why := endpoint_problem(e, served)) is not None:
            # which model's endpoint it is, where a grid of several (release configs, a models file) has many
            raise PreflightError(f"model {e.label}: {why}" if several and e.label not in why else why)
    why = toolchain_problem(toolchain, list(protocols), gpus) if here else None
    if why is not None:
        raise (NoGpuError if why.startswith("no NVIDIA GPU") else PreflightError)(why)
