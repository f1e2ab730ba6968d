"""Errors the engine raises for the API to turn into 4xx answers."""

from __future__ import annotations


class LocalboError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(LocalboError):
    status_code = 404


class Conflict(LocalboError):
    status_code = 409


class InvalidInput(LocalboError):
    """Input that parsed but does not fit the study; ``field`` names where."""

    status_code = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class Busy(LocalboError):
    """The study's plan kept changing under us; the client should retry."""

    status_code = 503
