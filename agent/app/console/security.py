"""The console's guards: who may connect, and which POSTs are genuine.

- Access token: a console bound to a non-loopback address must have one (`serve` refuses
  otherwise); with a token, every request needs it: `Authorization: Bearer TOKEN`, the
  `lessonloop_console` cookie, or `?token=TOKEN` once (sets the cookie, then redirects to
  the same URL without it, so the token does not linger in the address bar or history).
- Without a token the console answers only requests whose Host is a loopback name: a web
  page cannot reach it by DNS rebinding.
- CSRF: every POST carries the form field `csrf` (a random value per server process, put
  into every form by the templates; another site cannot read it) and, when the browser
  sends an Origin, it must be this console's own.
- Every response: a Content-Security-Policy allowing only the console's own scripts and
  styles (no inline script), nosniff, no framing.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.datastructures import URL
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from agent.errors import ConfigurationError

COOKIE = "lessonloop_console"
Endpoint = Callable[[Request], Awaitable[Response]]
CSRF_FIELD = "csrf"
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class ConsoleAccessError(ConfigurationError):
    """The console would be reachable from other machines without a token."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the name localhost."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback address without an access token."""
    if token is None and not is_loopback(host):
        raise ConsoleAccessError(
            f"refusing to serve on {host} without an access token: anyone who can reach it "
            "could change the lessons. Pass --token (or LESSONLOOP_CONSOLE_TOKEN), or bind "
            "127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise ConsoleAccessError("the console token must be at least 16 characters long")


def new_csrf_token() -> str:
    """A random per-process CSRF value."""
    return secrets.token_urlsafe(32)


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def _host_name(request: Request) -> str:
    host = request.headers.get("host", "")
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0]


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else None


class GuardMiddleware(BaseHTTPMiddleware):
    """Token (or loopback Host), then the Origin of a POST, then the security headers."""

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        refused = self._refuse(request)
        if refused is None and request.method == "POST":
            refused = self._refuse_post(request)
        response = refused or await call_next(request)
        for name, value in _HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    def _refuse(self, request: Request) -> Response | None:
        if self.token is None:
            if is_loopback(_host_name(request)):
                return None
            return PlainTextResponse("this console answers on a loopback address only", 421)
        given = request.query_params.get("token")
        if _same(given, self.token) and request.method == "GET":
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = URL(request.url.path).replace(query=urlencode(rest))
            redirect = RedirectResponse(str(target), status_code=303)
            redirect.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
            return redirect
        if _same(_bearer(request), self.token) or _same(request.cookies.get(COOKIE), self.token):
            return None
        return PlainTextResponse(
            "a token is required: open the URL `lessonloop serve` printed, or send "
            "Authorization: Bearer TOKEN",
            401,
        )

    def _refuse_post(self, request: Request) -> Response | None:
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is not None and not _same(origin, own):
            return PlainTextResponse(f"cross-origin POST refused (origin {origin})", 403)
        return None


def csrf_guard(handler: Endpoint, csrf: str) -> Endpoint:
    """Wrap a POST endpoint: the form's `csrf` field must be this process's value.

    Checked in the endpoint, not the middleware: the form is parsed once on the request the
    endpoint reads (a middleware that parsed it would leave the endpoint an empty body).
    """

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        field = form.get(CSRF_FIELD)
        if not isinstance(field, str) or not _same(field, csrf):
            return PlainTextResponse("missing or wrong CSRF token: reload the page", 403)
        return await handler(request)

    return endpoint
