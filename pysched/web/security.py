"""The dashboard's guards: where it may listen, who may see it, which POSTs count.

- **Bind**: a loopback address by default; any other address only with a
  token (``check_bind``), at least ``MIN_TOKEN`` characters long.
- **Token**: with one, every page asks for it once (a login form, or an
  ``Authorization: Bearer`` header for scripts) and then knows the browser by
  a cookie holding an HMAC of the token under this process's secret.
- **Hosts**: bound to loopback, only requests naming a loopback host are
  served (``TrustedHostMiddleware``), so a web page elsewhere cannot reach
  the dashboard through a DNS name rebound to 127.0.0.1.
- **CSRF**: every POST carries a form field that is an HMAC of a random
  per-browser cookie (``SameSite=Strict``, ``HttpOnly``) under the secret; a
  POST without it, with another browser's, or sent from another site
  (``Origin`` or ``Sec-Fetch-Site``) is refused with 403 and changes nothing.
- **Headers**: a Content-Security-Policy that allows no script at all and
  styles only from the dashboard itself, no framing, no referrer to other sites.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AUTH_COOKIE", "CSRF_COOKIE", "CSRF_FIELD", "LOOPBACK_HOSTS", "MIN_TOKEN", "Guard",
           "SecurityHeaders", "check_bind", "check_token", "is_loopback"]

CSRF_COOKIE = "pysched_csrf"
CSRF_FIELD = "csrf"
AUTH_COOKIE = "pysched_auth"
MIN_TOKEN = 16
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self';"
                               " form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not no-referrer: with it browsers send "Origin: null" on POSTs, which the CSRF check
    # refuses. Same-origin still tells no other site which page (which task id) linked it.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: Any) -> str | None:
    """``token`` if it is None or long enough to guess at no rate; else ValueError naming it."""
    if token is None:
        return None
    if not isinstance(token, str):
        raise TypeError(f"token must be a str, not {type(token).__name__}")
    if len(token) < MIN_TOKEN or not token.isprintable():
        raise ValueError(f"token must be at least {MIN_TOKEN} printable characters (make one:"
                         " python -c 'import secrets; print(secrets.token_urlsafe())')")
    return token


def check_bind(host: str, token: str | None) -> None:
    """ValueError naming ``--host`` unless ``host`` is loopback or a token guards it."""
    if token is None and not is_loopback(host):
        raise ValueError(f"--host {host} is reachable from other machines: give --token too"
                         " (or bind 127.0.0.1)")


class Guard:
    """The secret of one dashboard process and the checks made with it."""

    def __init__(self, token: str | None) -> None:
        self.token = check_token(token)
        self._secret = secrets.token_bytes(32)

    def _mac(self, text: str) -> str:
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()

    # -- who may see it ----------------------------------------------------------------------

    def token_matches(self, given: Any) -> bool:
        """Whether ``given`` is the token (in constant time)."""
        return (self.token is not None and isinstance(given, str)
                and hmac.compare_digest(given.encode(), self.token.encode()))

    def auth_cookie(self) -> str:
        """The cookie value that says a browser gave the token."""
        assert self.token is not None
        return self._mac("auth:" + hashlib.sha256(self.token.encode()).hexdigest())

    def admitted(self, request: Request) -> bool:
        """Whether ``request`` may see the dashboard: no token, its cookie, or its header."""
        if self.token is None:
            return True
        cookie = request.cookies.get(AUTH_COOKIE, "")
        if hmac.compare_digest(cookie.encode(), self.auth_cookie().encode()):
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(given.strip())

    # -- which POSTs count -------------------------------------------------------------------

    def browser_key(self, request: Request) -> tuple[str, bool]:
        """The browser's CSRF cookie, and whether it is new (then the response sets it)."""
        key = request.cookies.get(CSRF_COOKIE, "")
        if len(key) == 64 and all(c in "0123456789abcdef" for c in key):
            return key, False
        return secrets.token_hex(32), True

    def form_token(self, key: str) -> str:
        """The CSRF field of the forms shown to the browser whose cookie is ``key``."""
        return self._mac("csrf:" + key)

    def post_allowed(self, request: Request, form_token: Any) -> bool:
        """Whether a POST carries this browser's CSRF token and comes from this site."""
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return False
        origin = request.headers.get("origin")
        # The host alone: behind a proxy that ends TLS the scheme seen here differs.
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return False
        key = request.cookies.get(CSRF_COOKIE)
        return (key is not None and isinstance(form_token, str)
                and hmac.compare_digest(form_token.encode(), self.form_token(key).encode()))


class SecurityHeaders:
    """ASGI middleware: ``HEADERS`` on every HTTP response."""

    def __init__(self, app: ASGIApp, extra: Iterable[tuple[str, str]] = ()) -> None:
        self.app = app
        self.headers = {**HEADERS, **dict(extra)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)
