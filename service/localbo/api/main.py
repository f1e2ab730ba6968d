"""The ASGI app for uvicorn (``localbo.api.main:app``), configured from the environment."""

from localbo.api import create_app

app = create_app()
