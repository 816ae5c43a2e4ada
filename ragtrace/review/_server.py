"""``ragtrace review serve``: the review web app (stdlib ``http.server``, no framework).

``ReviewApp`` turns a request into a response (routing, auth, CSRF, pages); ``serve_review``
runs it on ragtrace's one small HTTP server in a daemon thread (``ragtrace.review._httpd``)::

    app = ReviewApp(store, LabelService(store, sinks), links=TraceLinks("jaeger"))
    with serve_review(app, port=8765) as server:
        print(server.url)

Routes: ``/queue`` (filters in the query string), ``/item/ID``, ``POST /item/ID/label``,
``/metrics`` (Prometheus, when a registry is given), ``/static/review.js|css``, ``/healthz``.

Security, because captured content is untrusted and labels change data:

- Pages escape everything (``ragtrace.review._pages``) and every response carries a strict
  Content-Security-Policy (no inline script, no framing, forms post only to this origin),
  ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``, ``Referrer-Policy:
  same-origin`` (trace links leak nothing; same-origin posts keep their ``Origin``) and
  ``Cache-Control: no-store``.
- CSRF: a random session cookie (HttpOnly, SameSite=Strict); each form carries
  HMAC(server secret, session) in a hidden field; a POST without both, with a wrong token, from
  another origin (``Origin`` / ``Sec-Fetch-Site``) or not form-encoded is refused (403 / 415).
- Bound to loopback, it answers only requests whose Host is a loopback name (no DNS
  rebinding). Bound to anything else it refuses to start without a token; with a token every
  page needs it: ``Authorization: Bearer TOKEN`` (e.g. a Prometheus scrape), or ``?token=TOKEN``
  once, which sets an auth cookie and redirects to the same URL without it. ``login_link()``
  makes a one-time ``?login=CODE`` that does the same once, within ``LOGIN_LINK_TTL_S``: what
  ``ragtrace review serve`` prints instead of the token, which it never prints.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ragtrace._network import authorized, same_secret
from ragtrace.review import _assets as assets
from ragtrace.review import _pages as pages
from ragtrace.review._filters import filter_from_params, paging_offset
from ragtrace.review._items import Label
from ragtrace.review._label_store import StaleLabel
from ragtrace.review._labels import LabelService
from ragtrace.review._pages import TraceLinks
from ragtrace.review._sql_store import SqlReviewStore

logger = logging.getLogger("ragtrace.review")

SESSION_COOKIE = "ragtrace_review_session"
AUTH_COOKIE = "ragtrace_review_auth"
NAME_COOKIE = "ragtrace_review_name"  # the reviewer name last saved, shown on claims
PAGE_SIZE = 50
LOGIN_LINK_TTL_S = 15 * 60.0
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_ITEM = re.compile(r"^/item/(\d{1,18})(/label)?/?$")
_HTML = "text/html; charset=utf-8"


@dataclass
class Request:
    """What the app needs of an HTTP request."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""

    @property
    def path(self) -> str:
        return urlsplit(self.target).path or "/"

    @property
    def params(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query).items()}

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def cookie(self, name: str) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(self.header("cookie") or "")
        except CookieError:
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None


@dataclass
class Response:
    """Status, headers and body."""

    status: int
    body: bytes = b""
    content_type: str = _HTML
    headers: list[tuple[str, str]] = field(default_factory=list)


class ReviewApp:
    """The review web app, independent of the socket server.

    Args:
        store: The review store.
        labels: Stores labels and publishes them as human Scores.
        links: Trace links (URL template).
        token: Required on every request when set (see the module docstring).
        registry: Served at ``/metrics`` when given.
        bound_host: The address the server listens on (loopback: Host names are checked).
        page_size: Items per queue page.
    """

    def __init__(
        self,
        store: SqlReviewStore,
        labels: LabelService,
        *,
        links: TraceLinks | None = None,
        token: str | None = None,
        registry: CollectorRegistry | None = None,
        bound_host: str = "127.0.0.1",
        page_size: int = PAGE_SIZE,
    ) -> None:
        if token is not None and len(token) < 16:
            raise ValueError("the review token must be at least 16 characters")
        self.store = store
        self.labels = labels
        self.links = links or TraceLinks()
        self.token = token
        self.registry = registry
        self.bound_host = bound_host
        self.page_size = page_size
        self._secret = secrets.token_bytes(32)
        self._logins: dict[str, float] = {}  # sha256 of a one-time login code -> its expiry
        self._logins_lock = threading.Lock()

    def login_link(self, ttl_s: float = LOGIN_LINK_TTL_S) -> str:
        """``/queue?login=CODE``: signs one browser in, once, within ``ttl_s`` (``/queue``
        without a token). What a command prints instead of the token."""
        if self.token is None:
            return "/queue"
        code = secrets.token_urlsafe(32)
        with self._logins_lock:
            self._logins[_digest(code)] = time.monotonic() + ttl_s
        return "/queue?" + urlencode({"login": code})

    def _take_login(self, code: str) -> bool:
        """Whether ``code`` is a one-time login code not used nor expired (then it is used)."""
        now = time.monotonic()
        with self._logins_lock:
            self._logins = {k: t for k, t in self._logins.items() if t > now}
            return self._logins.pop(_digest(code), None) is not None

    def close(self) -> None:
        """Unregister the review metrics and shut the label sinks down (the store stays open)."""
        if self.labels.review_metrics is not None:
            self.labels.review_metrics.unregister()
        self.labels.shutdown()

    # --- entry point ---------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        """Answer one request (never raises: a failure is a 500 page)."""
        try:
            response = self._route(request)
        except Exception:
            logger.exception("ragtrace review: %s %s failed", request.method, request.path)
            response = _page(500, pages.error_page(500, "Something went wrong; see the log."))
        response.headers.extend(SECURITY_HEADERS)
        return response

    def _route(self, request: Request) -> Response:
        path = request.path
        if path == "/healthz":
            return Response(200, b"ok\n", "text/plain; charset=utf-8")
        if not self._host_allowed(request):
            return _page(403, pages.error_page(403, "Unexpected Host header."))
        if path == "/static/review.js":
            return Response(200, assets.SCRIPT.encode(), "text/javascript; charset=utf-8")
        if path == "/static/review.css":
            return Response(200, assets.STYLE.encode(), "text/css; charset=utf-8")
        denied = self._authenticate(request)
        if denied is not None:
            return denied
        session, new_session = self._session(request)
        response = self._dispatch(request, path, session)
        if new_session:
            response.headers.append(("Set-Cookie", _cookie(SESSION_COOKIE, session)))
        return response

    def _dispatch(self, request: Request, path: str, session: str) -> Response:
        if path in ("/", "/queue", "/queue/") and request.method in ("GET", "HEAD"):
            if path == "/":
                return _redirect("/queue")
            return self._queue(request)
        if path == "/metrics" and self.registry is not None and request.method == "GET":
            encoder, content_type = choose_encoder(request.header("accept") or "")
            return Response(200, encoder(self.registry), content_type)
        match = _ITEM.match(path)
        if match is None:
            return _page(404, pages.error_page(404, "No such page."))
        item_id = int(match.group(1))
        if match.group(2):
            if request.method != "POST":
                return _page(405, pages.error_page(405, "Labels are saved with POST."))
            return self._label(request, item_id, session)
        if request.method not in ("GET", "HEAD"):
            return _page(405, pages.error_page(405, "Method not allowed."))
        return self._record(request, item_id, session)

    # --- pages ---------------------------------------------------------------------------

    def _queue(self, request: Request) -> Response:
        params = request.params
        try:
            filters = filter_from_params(params)
            offset = paging_offset(params.get("offset"))
        except ValueError as exc:
            return _page(400, pages.error_page(400, str(exc)))
        page = self.store.page(filters, offset=offset, limit=self.page_size)
        saved = _int_or_none(params.get("saved"))
        session = request.cookie(SESSION_COOKIE)
        holder = None if session is None else _holder(session)
        claims = self.store.claims([i.id for i in page.items], holder)
        html = pages.queue_page(page, filters, self.store.facets(), saved, claims)
        return _page(200, html)

    def _record(
        self, request: Request, item_id: int, session: str, refused: StaleLabel | None = None
    ) -> Response:
        """The record page; after a label refused as stale, with why (409)."""
        try:
            filters = filter_from_params(request.params)
        except ValueError as exc:
            return _page(400, pages.error_page(400, str(exc)))
        item = self.store.get(item_id)
        if item is None:
            return _page(404, pages.error_page(404, f"No review item {item_id}."))
        claim = None
        if request.method != "HEAD":  # opening the item: claim it, or see who holds it
            name = request.cookie(NAME_COOKIE)
            claim = self.store.claim(item_id, _holder(session), unquote(name) if name else None)
        view = pages.RecordView(
            item=item,
            labels=self.store.labels(item_id),
            neighbours=self.store.neighbours(item_id, filters),
            filters=filters,
            csrf=self._csrf(session),
            links=self.links,
            saved=_int_or_none(request.params.get("saved")),
            version=self.store.label_version(item_id),
            claim=claim,
            refused=None if refused is None else str(refused),
            session_turns=()
            if item.session_id is None
            else self.store.session_turns(item.session_id),
        )
        return _page(200 if refused is None else 409, pages.record_page(view))

    def _label(self, request: Request, item_id: int, session: str) -> Response:
        try:
            fields = parse_qs(
                request.body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20
            )
        except ValueError:
            return _page(400, pages.error_page(400, "Too many form fields."))
        form = {k: v[-1] for k, v in fields.items()}
        refused = self._check_post(request, session, form.get("csrf", ""))
        if refused is not None:
            return refused
        try:
            filters = filter_from_params(request.params)
            label = Label(
                verdict=form.get("verdict", ""),
                failure_type=form.get("failure_type") or None,
                notes=form.get("notes"),
                corrected_answer=form.get("corrected_answer"),
                reviewer=form.get("reviewer"),
            )
            version = _version(form.get("version"))
        except ValueError as exc:
            return _page(400, pages.error_page(400, str(exc)))
        _, next_id = self.store.neighbours(item_id, filters)
        try:
            self.labels.label(item_id, label, expected_label_id=version, holder=_holder(session))
        except KeyError:
            return _page(404, pages.error_page(404, f"No review item {item_id}."))
        except StaleLabel as stale:
            return self._record(request, item_id, session, stale)
        params = {**request.params, "saved": str(item_id)}
        params.pop("offset", None)
        where = f"/item/{next_id}" if next_id is not None else "/queue"
        response = _redirect(f"{where}?{urlencode(params)}")
        if label.reviewer:
            name = quote(label.reviewer[:100], safe="")
            response.headers.append(("Set-Cookie", _cookie(NAME_COOKIE, name)))
        return response

    # --- security ------------------------------------------------------------------------

    def _host_allowed(self, request: Request) -> bool:
        if self.token is not None:
            return True
        host = request.header("host") or ""
        name = urlsplit(f"//{host}").hostname or ""
        return name in LOOPBACK_NAMES or name == self.bound_host

    def _authenticate(self, request: Request) -> Response | None:
        if self.token is None:
            return None
        expected_cookie = self._derive("auth")
        if authorized(request.header("authorization"), self.token):
            return None
        cookie = request.cookie(AUTH_COOKIE)
        if cookie is not None and same_secret(cookie, expected_cookie):
            return None
        given, login = request.params.get("token"), request.params.get("login")
        if request.method == "GET" and (
            (given and same_secret(given, self.token)) or (login and self._take_login(login))
        ):
            params = {k: v for k, v in request.params.items() if k not in ("token", "login")}
            response = _redirect(request.path + (f"?{urlencode(params)}" if params else ""))
            response.headers.append(("Set-Cookie", _cookie(AUTH_COOKIE, expected_cookie)))
            return response
        message = (
            "This review server needs its token: open the one-time link it printed "
            "(?login=...), or add ?token=... to the URL."
        )
        response = _page(401, pages.error_page(401, message))
        response.headers.append(("WWW-Authenticate", 'Bearer realm="ragtrace review"'))
        return response

    def _check_post(self, request: Request, session: str, given: str) -> Response | None:
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            return _page(415, pages.error_page(415, "Send the label form as a form."))
        fetch_site = request.header("sec-fetch-site")
        if (fetch_site or "same-origin") not in ("same-origin", "none"):
            return _page(403, pages.error_page(403, "Cross-site form posts are refused."))
        origin = request.header("origin")
        # "null" is what a browser sends when it hides the origin; trusted only together with
        # the browser's own same-origin verdict.
        hidden = origin == "null" and fetch_site == "same-origin"
        if origin is not None and not hidden and urlsplit(origin).netloc != request.header("host"):
            return _page(403, pages.error_page(403, "The form came from another origin."))
        if request.cookie(SESSION_COOKIE) is None or not same_secret(given, self._csrf(session)):
            message = "The form's security token is missing or stale: reload the page."
            return _page(403, pages.error_page(403, message))
        return None

    def _session(self, request: Request) -> tuple[str, bool]:
        current = request.cookie(SESSION_COOKIE)
        if current and re.fullmatch(r"[A-Za-z0-9_-]{32,64}", current):
            return current, False
        return secrets.token_urlsafe(32), True

    def _csrf(self, session: str) -> str:
        return self._derive("csrf:" + session)

    def _derive(self, what: str) -> str:
        return hmac.new(self._secret, what.encode(), hashlib.sha256).hexdigest()


def _page(status: int, html: str) -> Response:
    return Response(status, html.encode("utf-8"))


def _redirect(location: str) -> Response:
    return Response(HTTPStatus.SEE_OTHER, b"", _HTML, [("Location", location)])


def _cookie(name: str, value: str) -> str:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def _holder(session: str) -> str:
    """What the store keeps as a session's claims (a digest: never the cookie itself)."""
    return hashlib.sha256(session.encode()).hexdigest()[:32]


def _version(text: str | None) -> int | None:
    """The label version a form was made with (None: an old form without one, unchecked)."""
    if text is None or not text.strip():
        return None
    if not text.strip().isdigit() or len(text.strip()) > 18:
        raise ValueError(f"the form's version must be a whole number, got {text!r}")
    return int(text)


def _int_or_none(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None
