"""Tell long-lived responses that the server is stopping.

uvicorn waits for every open response before it stops, and an event stream never ends by
itself; so on SIGINT/SIGTERM we set an event the streams watch, then call uvicorn's handler.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType

EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def on_exit_signals(callback: Callable[[], None]) -> Callable[[], None]:
    """Run ``callback`` in the running loop on an exit signal, before the previous handler; returns an undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals reach only the main thread (an in-process test client runs elsewhere)
    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in EXIT_SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(callback)
        before = previous[signal.Signals(signum)]
        if callable(before):  # uvicorn's: it begins the graceful shutdown
            before(signum, frame)

    for sig in EXIT_SIGNALS:
        signal.signal(sig, handler)

    def undo() -> None:
        for sig, before in previous.items():
            signal.signal(sig, before)

    return undo
