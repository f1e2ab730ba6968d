"""Log set-up for ``localbo serve`` and ``localbo worker``: plain text, or one JSON object a line
(``LOCALBO_LOG_FORMAT=json``) for a log shipper. Records keep their ``extra=`` fields (the access log's
request id, route, status, duration) as JSON keys."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# the attributes every LogRecord has; anything else on a record came from ``extra=``
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def dict_config(log_format: str, access_log: bool) -> dict:
    """The ``logging.config.dictConfig`` of a server: one stderr handler on the root logger (uvicorn's
    loggers propagate to it), warnings and above, the planners' notes, and the access log's records
    when ``access_log``. uvicorn applies it in every API process (``log_config=``)."""
    formatter = {"()": f"{__name__}.JsonFormatter"} if log_format == "json" else {"format": TEXT_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"localbo": formatter},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "localbo", "stream": "ext://sys.stderr"}
        },
        "root": {"level": "WARNING", "handlers": ["stderr"]},
        "loggers": {
            "uvicorn": {"level": "WARNING", "handlers": [], "propagate": True},
            "uvicorn.error": {"level": "WARNING", "handlers": [], "propagate": True},
            "uvicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
            "localbo": {"level": "INFO"},
            "localbo.access": {"level": "INFO" if access_log else "WARNING"},
        },
    }
