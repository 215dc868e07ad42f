"""One client for OpenAI-compatible chat endpoints (vLLM, TGI, OpenAI…): the LLM judge and
the evaluation runner both call endpoints through ``chat_completion``.

Only the standard library is used (``urllib.request``). The API key is read from an
environment variable at each call, never stored; when it is unset or empty no
``Authorization`` header is sent (a local vLLM needs none; an endpoint that wants one answers
401, and the error says the variable is not set).

Errors say which endpoint failed and how: ``ChatRetryable`` for HTTP 5xx / 429 and answers
that are not a chat completion (worth another try), ``ChatTimeout`` when the endpoint does not
answer in time, ``ChatError`` for everything else (4xx, refused connections).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass


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
            return json.loads(candidate)
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


def _headers(api_key_env: str | None) -> dict[str, str]:
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
    what: str = "the endpoint",
) -> ChatReply:
    """POST ``body`` to ``{base_url}/chat/completions``; returns the first choice."""
    url = f"{check_base_url(base_url)}/chat/completions"
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked above
        url, data=json.dumps(body).encode(), headers=_headers(api_key_env), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            raw = response.read()
    except urllib.error.HTTPError as error:
        detail = snippet(error.read().decode("utf-8", "replace"))
        if error.code >= 500 or error.code == 429:
            raise ChatRetryable(f"HTTP {error.code} {detail}".rstrip()) from error
        hint = ""
        if error.code in (401, 403) and api_key_env and not os.environ.get(api_key_env):
            hint = f" (the environment variable {api_key_env} is not set)"
        raise ChatError(f"{what} answered HTTP {error.code}{hint}: {detail}".rstrip()) from error
    except TimeoutError as error:
        raise ChatTimeout(f"{what} did not answer within {timeout_s:g} s") from error
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise ChatTimeout(f"{what} did not answer within {timeout_s:g} s") from error
        raise ChatError(f"could not reach {what} {url}: {error.reason}") from error
    except OSError as error:  # connection reset mid-answer and the like
        raise ChatError(f"{what} {url} failed: {error}") from error
    try:
        reply = json.loads(raw)
        choice = reply["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ChatRetryable(
            f"not a chat completion: {snippet(raw.decode('utf-8', 'replace'))}"
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
