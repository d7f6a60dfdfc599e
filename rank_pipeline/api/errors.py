"""Typed errors of the API client (spec "Errors", "Authentication", "Limits"), one class per status under
``RankTrackerError``, mapped by :func:`error_from_response`; no message holds a credential.
Hierarchy and message format: docs/concepts/api-client.md, "Errors".
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rank_pipeline.errors import RankPipelineError

TRANSPORT_KINDS = ("unreachable", "connect", "timeout", "dropped", "invalid_json", "transport")
"""Values of ``TransportError.kind``.

- ``unreachable``: the host never answered (DNS failure, connection refused or connect timeout
  before any response of this client);
- ``connect``: a connection could not be opened although the host answered earlier;
- ``timeout``: no response within the configured timeout;
- ``dropped``: the connection closed before a complete response;
- ``invalid_json``: a 2xx response whose body is not the JSON envelope;
- ``transport``: any other transport failure reported by httpx.
"""


def safe_url(url: Any) -> str:
    """``url`` as a string without any ``user:password@`` part (a guard: the key itself is never in a URL)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if parts.username is None and parts.password is None:
        return text
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact(text: str, secrets: list[str] | tuple[str, ...]) -> str:
    """Replace every occurrence of each non-empty secret in ``text`` with ``[redacted]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


class RankTrackerError(RankPipelineError):
    """Base of every error the API client raises: ``status`` (None without a response), ``code``, ``detail`` and
    ``pointer`` (the first error entry's, spec "Errors"; None on 401/403), ``errors`` (every entry as received),
    ``method`` and ``url`` (without credentials), ``message`` (also ``str(error)``).
    """

    summary = "the rank-tracking API returned an error"
    advice = ""

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int | None = None,
        code: str | None = None,
        detail: str | None = None,
        pointer: str | None = None,
        errors: list[dict] | None = None,
        method: str | None = None,
        url: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.pointer = pointer
        self.errors = list(errors or [])
        self.method = method
        self.url = safe_url(url) if url is not None else None
        self.message = message if message is not None else self._compose()
        super().__init__(self.message)

    def _compose(self) -> str:
        text = self.summary
        if self.detail:
            text += f": {self.detail}"
        if self.pointer:
            text += f" (at {self.pointer})"
        if self.advice:
            text += f". {self.advice}"
        return text + self._where()

    def _where(self) -> str:
        parts = []
        if self.method or self.url:
            parts.append(" ".join(p for p in (self.method, self.url) if p))
        tail = " ".join(str(p) for p in (self.status, self.code) if p is not None)
        if tail:
            parts.append(tail)
        return f" [{' -> '.join(parts)}]" if parts else ""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, detail={self.detail!r}, "
            f"pointer={self.pointer!r}, method={self.method!r}, url={self.url!r})"
        )

    def __reduce__(self):  # picklable across processes (Dagster, multiprocessing) with all fields
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))


def _rebuild(cls, message, state):
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class AuthenticationError(RankTrackerError):
    """401: the API key was rejected (spec "Authentication": header missing, malformed, or key wrong).

    The body is empty by spec, so ``code`` and ``detail`` are None. Never retried.
    """

    summary = "the API key was rejected (missing, malformed, wrong or deleted)"
    advice = (
        "Check that RANK_TRACKER_API_KEY (or RANK_TRACKER_API_KEY_<ACCOUNT> when several accounts are "
        "configured) holds a current key created in the vendor's web application (Account, API); "
        "a deleted key stops working immediately"
    )


class PermissionDeniedError(RankTrackerError):
    """403: the key is valid but the plan has no API access or the action is forbidden. Never retried."""

    summary = "the plan has no API access or the action is forbidden"
    advice = (
        "API access is a plan-level feature: check the account's plan (GET /v1/account/usage shows "
        "whether it has API access) or use a key of an account whose plan includes the API"
    )


class NotFoundError(RankTrackerError):
    """404 ``not_found``: the resource does not exist or belongs to another account. Never retried."""

    summary = "not found"
    advice = "The resource does not exist, was deleted, or belongs to another account than the key's"

    def _compose(self) -> str:
        # the spec's detail already names the resource ("<Resource> not found")
        head = self.detail or "resource not found"
        return f"{head}. {self.advice}{self._where()}"


class QuotaExceededError(RankTrackerError):
    """402 ``over_quota``: the plan's keyword or data-row allowance would be exceeded; nothing was created."""

    summary = "the plan's keyword or data-row allowance would be exceeded; nothing was created"
    advice = "Read GET /v1/account/usage for the remaining allowance, or raise the plan's limits"


class ValidationError(RankTrackerError):
    """422 ``invalid``, ``invalid_reference_value`` or ``validation_failed``; never retried. ``errors`` holds every
    entry, ``pointers`` their ``source.pointer`` in order (None where absent); the message names each.
    """

    summary = "the request was rejected as invalid"

    @property
    def pointers(self) -> list[str | None]:
        """The ``source.pointer`` of each entry of ``errors``, in order."""
        return [_pointer_of(entry) for entry in self.errors]

    def _compose(self) -> str:
        if not self.errors:
            return super()._compose()
        lines = []
        for entry in self.errors:
            title = entry.get("title") or entry.get("code") or "invalid"
            pointer = _pointer_of(entry)
            text = f"{title}" + (f" at {pointer}" if pointer else "")
            if entry.get("detail"):
                text += f": {entry['detail']}"
            lines.append(text)
        n = len(lines)
        head = f"{self.summary} ({n} error{'s' if n != 1 else ''})"
        return f"{head}: " + "; ".join(lines) + ". Correct the request; it is not retried" + self._where()


class BadRequestError(RankTrackerError):
    """400: a required parameter is missing or malformed (spec "Status codes"). Never retried."""

    summary = "the request was malformed (a required parameter is missing or malformed)"


class RateLimitedError(RankTrackerError):
    """429 ``rate_limited`` past the client's total retry time (``ClientConfig.max_retry_s``); ``retry_after``:
    the last ``Retry-After`` in seconds, or None.
    """

    summary = "the API kept answering 429 (rate limited) past the retry time bound"
    advice = (
        "Another consumer of the same key (GraphQL shares the per-key budget) or of the same IP address "
        "may be spending the budget; run again later or raise ClientConfig.max_retry_s"
    )

    def __init__(self, message: str | None = None, *, retry_after: float | None = None, **kwargs: Any):
        self.retry_after = retry_after
        super().__init__(message, **kwargs)


class ServerError(RankTrackerError):
    """5xx after the transient-retry budget (attempts and total time) was spent."""

    summary = "the API kept failing with a server error"
    advice = "The vendor's service may be having an outage; run again later"


class TransportError(RankTrackerError):
    """No usable HTTP answer (``kind``: one of ``TRANSPORT_KINDS``), after the transient-retry budget, or at once
    when the host never answered (``"unreachable"``: the message names the base URL and what to check).
    """

    summary = "the API could not be reached or gave no usable answer"

    def __init__(self, message: str | None = None, *, kind: str = "transport", **kwargs: Any):
        if kind not in TRANSPORT_KINDS:
            raise ValueError(f"unknown TransportError kind {kind!r}; expected one of {TRANSPORT_KINDS}")
        self.kind = kind
        super().__init__(message, **kwargs)

    def __repr__(self) -> str:
        return f"TransportError(kind={self.kind!r}, detail={self.detail!r}, method={self.method!r}, url={self.url!r})"


_BY_STATUS: dict[int, type[RankTrackerError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: QuotaExceededError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: ValidationError,
    429: RateLimitedError,
}


def _pointer_of(entry: dict) -> str | None:
    source = entry.get("source")
    if isinstance(source, dict) and isinstance(source.get("pointer"), str):
        return source["pointer"]
    return None


def parse_error_entries(body: Any) -> list[dict]:
    """Return the ``errors`` array of an error envelope (spec "Errors: Envelope"), or ``[]``.

    Tolerates an empty body (401/403), non-JSON bodies and entries that are not objects (skipped).
    """
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        return [entry for entry in body["errors"] if isinstance(entry, dict)]
    return []


def error_from_response(
    status: int,
    body: Any,
    *,
    method: str | None,
    url: str | None,
    retry_after: float | None = None,
    attempts: int | None = None,
) -> RankTrackerError:
    """The typed error (not raised) for an HTTP error response (spec "Status codes"): the class for ``status``,
    ``ServerError`` for 5xx, else ``RankTrackerError``.

    ``body``: the parsed JSON or None; ``url`` is stripped of credentials; ``retry_after``: a 429's seconds;
    ``attempts``: a 5xx's attempts made.
    """
    entries = parse_error_entries(body)
    first = entries[0] if entries else {}
    fields: dict[str, Any] = {
        "status": status,
        "code": first.get("code") if isinstance(first.get("code"), str) else None,
        "detail": first.get("detail") if isinstance(first.get("detail"), str) else None,
        "pointer": _pointer_of(first) if first else None,
        "errors": entries,
        "method": method,
        "url": url,
    }
    if status in (401, 403):
        # empty body by spec: never echo a body here, whatever it holds
        fields.update(code=None, detail=None, pointer=None, errors=[])
    if status == 429:
        return RateLimitedError(retry_after=retry_after, **fields)
    if 500 <= status <= 599:
        error: RankTrackerError = ServerError(**fields)
        if attempts:
            _set_message(error, f"{error.message} (gave up after {attempts} attempts)")
        return error
    cls = _BY_STATUS.get(status)
    if cls is None:
        error = RankTrackerError(**fields)
        head = f"the API answered with status {status}, which the spec does not list"
        _set_message(error, head + (f": {error.detail}" if error.detail else "") + error._where())
        return error
    return cls(**fields)


def _set_message(error: RankTrackerError, message: str) -> None:
    error.message = message
    error.args = (message,)
