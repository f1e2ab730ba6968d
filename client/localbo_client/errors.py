"""Typed errors carrying the server's message."""

from __future__ import annotations


class LocalboError(Exception):
    """An answer the client cannot turn into a result; ``status`` is the HTTP code, ``detail`` the server's
    message (it names the field or setting at fault). Each status has its subclass below.

    ```python
    try:
        client.get_study("beam")
    except NotFound as exc:
        print(exc.status, exc.detail)       # 404 study 'beam' not found
    ```
    """

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class BadRequest(LocalboError):
    """400/422: the request does not fit (the message names the field)."""


class Unauthorized(LocalboError):
    """401: no token, or an unknown one."""


class Forbidden(LocalboError):
    """403: the token's scopes do not cover this study."""


class NotFound(LocalboError):
    """404: no such study or trial."""


class Conflict(LocalboError):
    """409: the request contradicts what is stored (a second, different tell)."""


class TooLarge(LocalboError):
    """413: the request body is over the server's limit."""


class ServerError(LocalboError):
    """5xx after all retries."""


BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    422: BadRequest,
}


def error_for(status: int, detail: str) -> LocalboError:
    """The error for an answer's ``status`` (any 5xx: ``ServerError``; an unlisted 4xx: ``LocalboError``).

    ```python
    error_for(404, "study 'beam' not found")       # NotFound(404, ...)
    ```
    """
    if status >= 500:
        return ServerError(status, detail)
    return BY_STATUS.get(status, LocalboError)(status, detail)
