"""The pysched dashboard: see and steer a durable schedule in a browser.

``create_app(store, ...)`` is an ASGI app (Starlette, Jinja2); ``pysched web
--store URL`` serves it with uvicorn, and it mounts inside a Starlette or
FastAPI app of your own::

    from starlette.applications import Starlette
    from starlette.routing import Mount
    from pysched.web import create_app

    app = Starlette(routes=[Mount("/schedules", create_app("postgresql://app@db/app"))])

Needs the ``web`` extra: ``pip install 'pysched[web]'``. docs/operations.md
describes its pages and its security model.
"""

from .app import Dashboard, create_app

__all__ = ["Dashboard", "create_app"]
