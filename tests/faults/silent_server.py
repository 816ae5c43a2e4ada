"""A TCP server that accepts every connection and never answers: a hung HTTP dependency.

Run it as its own process, so a test can stop it by its id::

    python -m tests.faults.silent_server 41234

It prints ``listening`` once the port is open, then reads and discards what clients send,
holding every connection open until the client gives up or the process is stopped.
"""

from __future__ import annotations

import socket
import sys
import threading


def _swallow(conn: socket.socket) -> None:
    with conn:
        while conn.recv(65536):
            pass


def serve(port: int) -> None:
    """Accept on 127.0.0.1:``port`` forever; never write a byte."""
    with socket.create_server(("127.0.0.1", port), backlog=64) as server:
        print("listening", flush=True)
        while True:
            conn, _ = server.accept()
            threading.Thread(target=_swallow, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
