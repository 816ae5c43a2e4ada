"""The review web app over real HTTP: untrusted content is escaped, forms need their CSRF token,
a token guards anything beyond loopback, every response carries the security headers."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._model import Chunk
from ragtrace._network import is_loopback
from ragtrace.review._httpd import ReviewServer, serve_review
from ragtrace.review._items import Label, Reason, ReviewItem, StoredScore
from ragtrace.review._pages import TraceLinks
from ragtrace.review._server import CSP
from ragtrace.review._store import SqlReviewStore
from ragtrace.review._wiring import build_app
from tests.review.conftest import make_item, score

SCRIPT = "<script>window.__pwned = 1; alert(1)</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
TOKEN = "s3cret-token-for-tests-0123456789"


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: str

    def cookie(self, name: str) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        for value in self.headers.get_all("Set-Cookie") or []:
            jar.load(value)
        return jar[name].value if name in jar else None


class Client:
    """Plain HTTP with explicit headers (no redirects followed, cookies by hand)."""

    def __init__(self, server: ReviewServer) -> None:
        self.host, self.port = "127.0.0.1", server.port
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, body: str | bytes = b"", headers: dict[str, str] | None = None
    ) -> Reply:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        all_headers = {"Host": f"{self.host}:{self.port}"}
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        all_headers.update(headers or {})
        conn.request(method, path, body=body, headers=all_headers)
        response = conn.getresponse()
        reply = Reply(response.status, response.headers, response.read().decode())
        conn.close()
        for name in ("ragtrace_review_session", "ragtrace_review_auth"):
            value = reply.cookie(name)
            if value is not None:
                self.cookies[name] = value
        return reply

    def get(self, path: str, **headers: str) -> Reply:
        return self.request("GET", path, headers=headers)

    def post_form(self, path: str, form: dict[str, str], **headers: str) -> Reply:
        return self.request(
            "POST",
            path,
            urlencode(form),
            {"Content-Type": "application/x-www-form-urlencoded", **headers},
        )


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert match, page
    return match.group(1)


def hostile_item() -> ReviewItem:
    return ReviewItem(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        app=f"app{SCRIPT}",
        model=f"model{IMG}",
        query=f"Question {SCRIPT} and {IMG} and </textarea><b>bold</b>",
        response=f"Answer {SCRIPT}. It cost 5 euros {IMG}.",
        chunks=(Chunk(f"chunk {SCRIPT}", id=f'id"{IMG}', score=0.5, source="<i>src</i>"),),
        scores=(
            StoredScore(
                "groundedness",
                score(
                    f"ground{SCRIPT}",
                    0.1,
                    False,
                    kind="model",
                    explanation=f"because {IMG}",
                    details={"unsupported": [f"It cost 5 euros {IMG}."]},
                ),
            ),
        ),
        reasons=(Reason("score_failed", 50, "g", f"detail {IMG}"), Reason(f"x{SCRIPT}", 1)),
        priority=50,
    )


@pytest.fixture
def served(sqlite_store: SqlReviewStore) -> Iterator[tuple[ReviewServer, SqlReviewStore]]:
    app = build_app(sqlite_store, registry=CollectorRegistry(), links=TraceLinks("jaeger"))
    with serve_review(app, "127.0.0.1", 0) as server:
        yield server, sqlite_store
    app.close()


def test_untrusted_content_is_escaped_everywhere(
    served: tuple[ReviewServer, SqlReviewStore],
) -> None:
    server, store = served
    item_id = store.enqueue(hostile_item())
    store.add_label(
        item_id, Label("bad", notes=f"note {SCRIPT}", corrected_answer=IMG, reviewer=IMG)
    )
    client = Client(server)
    for path in (f"/item/{item_id}", "/queue?labelled=all", "/queue?labelled=all&q=%3Cscript%3E"):
        page = client.get(path).body
        assert page.count("<script") == 1  # only the app's own script tag
        assert '<script src="/static/review.js" defer></script>' in page
        assert "<img" not in page and "<b>bold" not in page and "<i>src" not in page
        assert "&lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;" in page
    page = client.get(f"/item/{item_id}").body
    assert "&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;" in page
    assert "&lt;/textarea&gt;&lt;b&gt;bold&lt;/b&gt;" in page
    # The unsupported sentence is highlighted, still escaped inside the mark.
    assert (
        '<mark class="unsupported" title="unsupported according to ground&lt;script&gt;'
        'window.__pwned = 1; alert(1)&lt;/script&gt;">It cost 5 euros &lt;img src=x '
        "onerror=&quot;window.__pwned=2&quot;&gt;.</mark>"
    ) in page
    assert 'href="http://localhost:16686/trace/0af7651916cd43dd8448eb211c80319c"' in page
    assert 'rel="noopener noreferrer"' in page


def test_every_response_carries_the_security_headers(
    served: tuple[ReviewServer, SqlReviewStore],
) -> None:
    server, store = served
    item_id = store.enqueue(make_item(1))
    client = Client(server)
    for path in ("/queue", f"/item/{item_id}", "/nowhere", "/static/review.js", "/metrics", "/"):
        reply = client.get(path)
        assert reply.headers["Content-Security-Policy"] == CSP, path
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
        assert reply.headers["X-Frame-Options"] == "DENY"
        assert reply.headers["Referrer-Policy"] == "same-origin"
        assert reply.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in CSP and "script-src 'self'" in CSP
    assert "unsafe-inline" not in CSP
    session = Client(server).get("/queue").headers["Set-Cookie"]
    assert "HttpOnly" in session and "SameSite=Strict" in session


def test_label_posts_need_the_session_and_its_csrf_token(
    served: tuple[ReviewServer, SqlReviewStore],
) -> None:
    server, store = served
    first = store.enqueue(make_item(1, priority=60))
    second = store.enqueue(make_item(2, priority=50))
    alice = Client(server)
    token = csrf_of(alice.get(f"/item/{first}").body)
    form = {"csrf": token, "verdict": "bad", "failure_type": "hallucination", "notes": "wrong"}
    action = f"/item/{first}/label?reason=score_failed"

    stranger = Client(server)
    assert stranger.post_form(action, form).status == 403  # no session cookie
    mallory = Client(server)
    mallory.get("/queue")
    assert mallory.post_form(action, form).status == 403  # another session's token
    assert alice.post_form(action, {**form, "csrf": "0" * 64}).status == 403
    assert alice.post_form(action, {**form, "csrf": "\u00e9" * 64}).status == 403
    assert alice.post_form(action, {k: v for k, v in form.items() if k != "csrf"}).status == 403
    assert alice.post_form(action, form, Origin="http://evil.example").status == 403
    assert alice.post_form(action, form, Origin="null").status == 403  # hidden, no fetch site
    assert (
        alice.post_form(action, form, Origin="null", **{"Sec-Fetch-Site": "same-site"}).status
        == 403
    )
    assert alice.post_form(action, form, **{"Sec-Fetch-Site": "cross-site"}).status == 403
    as_json = alice.request(
        "POST", action, '{"verdict": "bad"}', {"Content-Type": "application/json"}
    )
    assert as_json.status == 415
    assert store.labels(first) == []

    ok = alice.post_form(action, form, Origin=f"http://127.0.0.1:{server.port}")
    assert ok.status == 303
    target = urlsplit(ok.headers["Location"])
    assert target.path == f"/item/{second}"  # on to the next item of the same filter
    assert dict(p.split("=") for p in target.query.split("&")) == {
        "reason": "score_failed",
        "saved": str(first),
    }
    (label,) = store.labels(first)
    assert label.label == Label("bad", "hallucination", notes="wrong")
    assert "Label saved for item" in alice.get(ok.headers["Location"]).body
    last = alice.post_form(f"/item/{second}/label", {"csrf": token, "verdict": "good"})
    assert last.status == 303 and urlsplit(last.headers["Location"]).path == "/queue"


def test_bad_input_gets_a_clear_error_status(served: tuple[ReviewServer, SqlReviewStore]) -> None:
    server, store = served
    item_id = store.enqueue(make_item(1))
    client = Client(server)
    token = csrf_of(client.get(f"/item/{item_id}").body)
    bad_verdict = client.post_form(f"/item/{item_id}/label", {"csrf": token, "verdict": "meh"})
    assert bad_verdict.status == 400 and "verdict must be one of" in bad_verdict.body
    missing = client.post_form("/item/999/label", {"csrf": token, "verdict": "good"})
    assert missing.status == 404
    assert client.get("/item/999").status == 404
    assert client.get(f"/item/{item_id}/label").status == 405
    bad_filter = client.get("/queue?min=%3Cscript%3E")
    assert bad_filter.status == 400 and "&lt;script&gt;" in bad_filter.body
    assert client.get("/queue?since=yesterday").status == 400
    # Refused on its Content-Length, before reading a byte of it.
    huge = client.request(
        "POST",
        f"/item/{item_id}/label",
        b"x",
        {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": str(2 << 20)},
    )
    assert huge.status == 413
    assert store.labels(item_id) == []


def test_loopback_server_refuses_foreign_host_names(
    served: tuple[ReviewServer, SqlReviewStore],
) -> None:
    server, _ = served
    client = Client(server)
    assert client.get("/queue", Host=f"evil.example:{server.port}").status == 403  # rebinding
    assert client.get("/queue", Host=f"localhost:{server.port}").status == 200
    assert client.get("/healthz", Host="evil.example").status == 200


def test_a_token_guards_every_page_and_the_metrics(sqlite_store: SqlReviewStore) -> None:
    registry = CollectorRegistry()
    app = build_app(sqlite_store, registry=registry, token=TOKEN)
    item_id = sqlite_store.enqueue(make_item(1))
    with serve_review(app, "127.0.0.1", 0) as server:
        assert TOKEN not in server.login_url()
        client = Client(server)
        assert client.get("/queue").status == 401
        assert client.get(f"/item/{item_id}").status == 401
        assert client.get("/queue?token=wrong-token-wrong-token").status == 401
        assert client.get("/queue?token=%C3%A9t%C3%A9").status == 401
        assert client.get("/metrics").status == 401
        assert client.get("/healthz").status == 200
        login = client.get(f"/queue?reason=pii&token={TOKEN}")
        assert login.status == 303
        assert login.headers["Location"] == "/queue?reason=pii"  # the token leaves the URL
        assert "ragtrace_review_auth" in client.cookies
        assert client.cookies["ragtrace_review_auth"] != TOKEN
        assert client.get(f"/item/{item_id}").status == 200
        scrape = Client(server).get("/metrics", Authorization=f"Bearer {TOKEN}")
        assert scrape.status == 200 and "ragtrace_review_queue_size" in scrape.body
        assert Client(server).get("/metrics", Authorization="Bearer nope").status == 401
    app.close()
    with pytest.raises(ValueError, match="at least 16"):
        build_app(sqlite_store, token="short")


def test_a_login_link_signs_one_browser_in_once(sqlite_store: SqlReviewStore) -> None:
    app = build_app(sqlite_store, token=TOKEN)
    assert build_app(sqlite_store).login_link() == "/queue"  # no token: nothing to sign in
    with serve_review(app, "127.0.0.1", 0) as server:
        link = server.login_url()
        path = link.removeprefix(server.url)
        assert path.startswith("/queue?login=") and TOKEN not in link
        first = Client(server)
        login = first.get(path.replace("/queue?", "/queue?reason=pii&"))
        assert login.status == 303
        assert login.headers["Location"] == "/queue?reason=pii"  # the code leaves the URL
        assert first.get("/queue").status == 200
        assert Client(server).get(path).status == 401  # used: another browser is refused
        assert Client(server).get("/queue?login=made-up-code").status == 401
        assert Client(server).get(app.login_link(ttl_s=0)).status == 401  # expired
    app.close()


def test_serving_beyond_loopback_needs_a_token(sqlite_store: SqlReviewStore) -> None:
    open_app = build_app(sqlite_store)
    with pytest.raises(ValueError, match="with no token"):
        serve_review(open_app, "0.0.0.0", 0)
    guarded = build_app(sqlite_store, token=TOKEN)
    with serve_review(guarded, "0.0.0.0", 0) as server:
        client = Client(server)
        assert client.get("/queue", Host=f"review.internal:{server.port}").status == 401
        assert client.get("/queue", Authorization=f"Bearer {TOKEN}").status == 200
    assert [is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost")] == [
        True,
        True,
        True,
        True,
        True,
    ]
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com", "")] == [
        False,
        False,
        False,
        False,
        False,
    ]
    open_app.close()
    guarded.close()


def test_trace_links_fill_a_template_and_refuse_unsafe_ones() -> None:
    item = make_item(1, trace_id="a/b c")
    assert TraceLinks().href(item) is None
    assert TraceLinks("phoenix").href(item) == (f"http://localhost:6006/redirects/spans/{1:016x}")
    grafana = TraceLinks(
        'https://grafana/explore?left={"queries":[{"query":"{trace_id}"}]}&a={app}'
    )
    assert (
        grafana.href(item)
        == 'https://grafana/explore?left={"queries":[{"query":"a%2Fb%20c"}]}&a=shop'
    )
    assert TraceLinks("jaeger").href(make_item(2, trace_id="")) is None
    with pytest.raises(ValueError, match="http"):
        TraceLinks("javascript:alert('{trace_id}')")
    with pytest.raises(ValueError, match="needs"):
        TraceLinks("https://jaeger/search")
