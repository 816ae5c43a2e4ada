"""Who can reach a ragtrace server: one rule for every port ragtrace opens.

Every server ragtrace runs (the ``/metrics`` endpoint of ``init``, ``ragtrace worker`` and
``ragtrace ingest`` with their health probes, the ingest receivers, ``ragtrace review serve``,
``ragtrace judge serve``, the demo's endpoint) follows the same rule:

- on a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``) it starts, with or without
  a token;
- beyond loopback (``0.0.0.0``, ``::``, an interface's address, a host name that is not
  loopback only) it starts only with a token, or when the user said in so many words that
  unauthenticated access is meant (``--allow-unauthenticated``,
  ``metrics_allow_unauthenticated``); otherwise ``check_exposure`` raises ``ExposureRefused``
  naming both ways out;
- once it listens, one line says the address really bound, whether a token is asked for and
  where it came from (``listening_line``: ``bearer token required (from
  $RAGTRACE_INGEST_TOKEN)``); the token itself is never printed nor logged.

The HTTP servers themselves (binding, their thread, body limits, quiet logs) are one small
server in ``ragtrace._network.http``; how a command that serves until stopped stops (Ctrl-C or
SIGTERM, whatever it inherited) is ``ragtrace._network.signals``; what reaches a person's
terminal the other way, names from outside with their control characters escaped, is
``ragtrace._network.terminal``. Every token, key or cookie
ragtrace checks goes through ``same_secret`` (``hmac.compare_digest``: constant time), which
``authorized`` uses for ``Authorization: Bearer`` headers::

    check_exposure("ragtrace metrics", "0.0.0.0", 9464, token=None, allowed=False,
                   token_hint="metrics_token (RAGTRACE_METRICS_TOKEN)",
                   allow_hint="metrics_allow_unauthenticated")   # raises ExposureRefused
"""

from __future__ import annotations

import hmac
import ipaddress
import socket

WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that bind every interface."""


class ExposureRefused(ValueError):
    """A server would listen beyond loopback without a token, and nobody said that is meant."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a host name to bind) is reachable from this machine only:
    a loopback address, ``localhost``, or a name whose every address is loopback."""
    if host == "localhost":
        return True
    if host in WILDCARDS:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:  # a host name: loopback only if every address it names is
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_exposure(
    what: str,
    host: str,
    port: int,
    *,
    token: str | None,
    allowed: bool,
    token_hint: str,
    allow_hint: str | None,
) -> None:
    """Refuse to listen on ``host`` beyond loopback without a token, unless ``allowed``.

    Args:
        what: The server, for the message (``ragtrace review serve``).
        host, port: Where it would listen.
        token: The token it asks for (None: none).
        allowed: The user said unauthenticated access beyond loopback is meant.
        token_hint: How to give it a token (``--token or RAGTRACE_REVIEW_TOKEN``).
        allow_hint: How to say an open server is meant (``--allow-unauthenticated``); None:
            an open server of this kind is never allowed.

    Raises:
        ExposureRefused: Beyond loopback, no token, not allowed; the message says both ways out.
    """
    if token or allowed or is_loopback(host):
        return
    ways = f"Give it a token ({token_hint}) or bind it to 127.0.0.1"
    if allow_hint is not None:
        ways = (
            f"Give it a token ({token_hint}), bind it to 127.0.0.1, or say that an open server "
            f"is meant ({allow_hint}: a private network, a sidecar)"
        )
    raise ExposureRefused(
        f"{what} would listen on {host or '0.0.0.0'}:{port}, which other machines reach, with "
        f"no token: anyone who reaches it could use it. {ways}"
    )


def auth_state(host: str, token: str | None, source: str | None = None) -> str:
    """Whether a server on ``host`` asks for a token, in words, with where the token came from
    (``source``: a flag or variable name, e.g. ``$RAGTRACE_INGEST_TOKEN``), never the token."""
    if token:
        return "bearer token required" + (f" (from {source})" if source else "")
    if is_loopback(host):
        return "no token (loopback only)"
    return "NO authentication (allowed by the user)"


def listening_line(
    what: str, url: str, host: str, token: str | None, source: str | None = None
) -> str:
    """``<what> listening on <url> (all interfaces); <auth>``: the line a server logs at start,
    with the address really bound (``url``) and where its token came from (``source``)."""
    where = " (every interface)" if host in WILDCARDS else ""
    return f"{what} listening on {url}{where}; {auth_state(host, token, source)}"


def same_secret(given: str, expected: str) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time (``hmac.compare_digest``):
    the one comparison ragtrace uses for tokens, keys and cookies. Takes any text (non-ASCII,
    lone surrogates); a different length is simply unequal."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def authorized(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>`` (``same_secret``)."""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and same_secret(given.strip(), token)
