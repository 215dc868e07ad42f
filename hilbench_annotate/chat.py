"""One client for OpenAI-compatible chat endpoints (vLLM, TGI, OpenAI…): the LLM judge and
the evaluation runner both call endpoints through ``chat_completion``.

Only the standard library is used (``urllib.request``). The API key is read from an
environment variable at each call, never stored; when it is unset or empty no
``Authorization`` header is sent (a local vLLM needs none; an endpoint that wants one answers
401, and the error says the variable is not set).

Connections go only where the outbound address policy (``toolkit/egress.py``) allows, for
the ``allowed_hosts`` the caller passes (the operator's allowlist): each connection is made to
the address that was checked, no proxy is used, and redirects are not followed (an endpoint
is registered at its final URL), so no answer from an allowed host can send the worker to an
internal address.

Errors say which endpoint failed and how: ``ChatRetryable`` for HTTP 5xx / 429 and answers
that are not a chat completion (worth another try), ``ChatTimeout`` when the endpoint does not
answer in time, ``ChatError`` for everything else (4xx, refused connections, addresses the
policy refuses). They never repeat a body that is not the expected shape — whatever answered
may be something other than a model endpoint — only an OpenAI-style error's message.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from hilbench_annotate.toolkit.egress import EgressRefused, create_checked_connection
from hilbench_annotate.toolkit.jsontext import json_loads


class ChatError(Exception):
    """The endpoint could not be used for this request."""


class ChatRetryable(ChatError):
    """A server-side failure that another attempt may not meet (5xx, 429, garbage)."""


class ChatTimeout(ChatError):
    """The endpoint did not answer within the time limit."""


@dataclass(frozen=True)
class ChatReply:
    message: dict  # role, content, tool_calls…
    logprobs: dict | None  # when the request asked for them and the endpoint sends them
    usage: dict | None  # prompt_tokens, completion_tokens, total_tokens


_FENCED = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json(content: str) -> object:
    """JSON from a model's reply: the whole text, a fenced ```json block, or the outermost
    {...}. ValueError when none of them parses."""
    text = content.strip()
    candidates = [text]
    candidates += [match.strip() for match in _FENCED.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json_loads(candidate)
        except ValueError:
            continue
    raise ValueError(f"the reply is not JSON: {snippet(content)}")


def snippet(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def check_base_url(base_url: str) -> str:
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
    return base_url.rstrip("/")


def _checked_connection_factory(allowed_hosts: tuple[str, ...]):
    def create(address, timeout=None, source_address=None):
        seconds = timeout if isinstance(timeout, int | float) else None
        return create_checked_connection(
            address[0], address[1], allowed_hosts=allowed_hosts, timeout=seconds
        )

    return create


class _CheckedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, allowed_hosts: tuple[str, ...], **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _checked_connection_factory(allowed_hosts)


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    # connect() wraps the checked socket with server_hostname=self.host: the certificate is
    # still checked against the URL's host name, not the address.
    def __init__(self, *args, allowed_hosts: tuple[str, ...], **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _checked_connection_factory(allowed_hosts)


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, allowed_hosts: tuple[str, ...]):
        super().__init__()
        self.allowed_hosts = allowed_hosts

    def http_open(self, req):
        return self.do_open(_CheckedHTTPConnection, req, allowed_hosts=self.allowed_hosts)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, allowed_hosts: tuple[str, ...]):
        super().__init__()
        self.allowed_hosts = allowed_hosts

    def https_open(self, req):
        return self.do_open(_CheckedHTTPSConnection, req, allowed_hosts=self.allowed_hosts)


def checked_opener(allowed_hosts: Sequence[str]) -> urllib.request.OpenerDirector:
    """http(s) only, checked connections, no proxy, and no redirect handler: a 3xx answer is
    an HTTPError like any other."""
    opener = urllib.request.OpenerDirector()
    hosts = tuple(allowed_hosts)
    for handler in (
        _CheckedHTTPHandler(hosts),
        _CheckedHTTPSHandler(hosts),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):
        opener.add_handler(handler)
    return opener


# How much of an error answer is read to find an OpenAI-style message in it.
_ERROR_BODY_LIMIT = 64 * 1024


def _shape(status: int, content_type: str | None, size: int) -> str:
    return f"HTTP {status}, {content_type or 'no content type'}, {size} bytes"


def _error_message(raw: bytes) -> str | None:
    """The message of an error answer in a shape model servers use: OpenAI's
    {"error": {"message": …}}, TGI's {"error": "…"}, vLLM's {"object": "error", "message": …}."""
    try:
        data = json_loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
    elif isinstance(error, str):
        message = error
    else:
        message = data.get("message") if data.get("object") == "error" else None
    return message if isinstance(message, str) and message.strip() else None


def _error_detail(error: urllib.error.HTTPError) -> str:
    """An error answer's message (``_error_message``), truncated; otherwise only its content
    type and size, never its body."""
    try:
        raw = error.read(_ERROR_BODY_LIMIT + 1)
    except OSError:
        raw = b""
    message = _error_message(raw[:_ERROR_BODY_LIMIT])
    if message is not None:
        return snippet(message)
    content_type = error.headers.get("Content-Type") if error.headers else None
    size = f"over {_ERROR_BODY_LIMIT}" if len(raw) > _ERROR_BODY_LIMIT else str(len(raw))
    return f"({content_type or 'no content type'}, {size} bytes)" if raw else ""


def _http_error(error: urllib.error.HTTPError, *, what: str, api_key_env: str | None) -> ChatError:
    detail = _error_detail(error)
    if error.code >= 500 or error.code == 429:
        return ChatRetryable(f"HTTP {error.code} {detail}".rstrip())
    if 300 <= error.code < 400:
        return ChatError(
            f"{what} answered HTTP {error.code}, a redirect: redirects are not followed; "
            "register the endpoint at its final URL"
        )
    hint = ""
    if error.code in (401, 403) and api_key_env and not os.environ.get(api_key_env):
        hint = f" (the environment variable {api_key_env} is not set)"
    return ChatError(f"{what} answered HTTP {error.code}{hint}" + (f": {detail}" if detail else ""))


def request_headers(api_key_env: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = os.environ.get(api_key_env, "") if api_key_env else ""
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def chat_completion(
    *,
    base_url: str,
    body: dict,
    api_key_env: str | None,
    timeout_s: float,
    allowed_hosts: Sequence[str],
    what: str = "the endpoint",
) -> ChatReply:
    """POST ``body`` to ``{base_url}/chat/completions``; returns the first choice.

    ``allowed_hosts`` is the operator's allowlist for this endpoint (``toolkit/egress.py``):
    empty, any public host; a host it names may have any address."""
    url = f"{check_base_url(base_url)}/chat/completions"
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked above
        url, data=json.dumps(body).encode(), headers=request_headers(api_key_env), method="POST"
    )
    try:
        with checked_opener(allowed_hosts).open(request, timeout=timeout_s) as response:
            raw = response.read()
            status, content_type = response.status, response.headers.get("Content-Type")
    except EgressRefused as error:
        raise ChatError(f"{what} {url} is refused: {error}") from error
    except urllib.error.HTTPError as error:
        raise _http_error(error, what=what, api_key_env=api_key_env) from error
    except TimeoutError as error:
        raise ChatTimeout(f"{what} did not answer within {timeout_s:g} s") from error
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise ChatTimeout(f"{what} did not answer within {timeout_s:g} s") from error
        raise ChatError(f"could not reach {what} {url}: {error.reason}") from error
    except OSError as error:  # connection reset mid-answer and the like
        raise ChatError(f"{what} {url} failed: {error}") from error
    try:
        reply = json_loads(raw)
        choice = reply["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ChatRetryable(
            f"not a chat completion ({_shape(status, content_type, len(raw))})"
        ) from error
    if not isinstance(message, dict):
        raise ChatRetryable("the chat completion has no message")
    usage = reply.get("usage")
    logprobs = choice.get("logprobs")
    return ChatReply(
        message=message,
        logprobs=logprobs if isinstance(logprobs, dict) else None,
        usage=usage if isinstance(usage, dict) else None,
    )
