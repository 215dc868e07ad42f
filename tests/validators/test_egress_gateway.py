"""The build's registry proxy, outside half (validators/sandbox/egress.py): what a step can do
to the worker through it is bounded — connections at once, a slow request head, what the
result records — and every relay ends with the run."""

import socket
import threading
import time

from validators.sandbox import egress, run_folder
from validators.sandbox.egress import EgressGateway


def _connect(folder):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(str(folder / egress.SOCKET_NAME))
    return client


def _answer(client) -> bytes:
    data = b""
    while b"\r\n" not in data:
        piece = client.recv(1024)
        if not piece:
            break
        data += piece
    return data


def _echo_server():
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    return server, accepted


def test_connections_at_once_are_capped_and_refusals_are_named(monkeypatch):
    monkeypatch.setattr(egress, "MAX_CONNECTIONS", 3)
    with run_folder() as folder, EgressGateway(folder, ["pypi.org"]) as gateway:
        idle = [_connect(folder) for _ in range(3)]  # each holds a slot: no head sent
        time.sleep(0.3)
        extra = _connect(folder)
        assert _answer(extra).startswith(b"HTTP/1.1 503"), "a fourth connection was served"
        for sock in idle:
            sock.close()
        time.sleep(0.3)
        refused = _connect(folder)
        refused.sendall(b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\x1b[31mX: y\r\n\r\n")
        assert _answer(refused).startswith(b"HTTP/1.1 403")
    assert any("127.0.0.1:443" in line for line in gateway.refused)
    assert all(line.isprintable() for line in gateway.refused)


def test_a_slow_head_is_cut_off(monkeypatch):
    monkeypatch.setattr(egress, "HEAD_TIMEOUT_S", 1.0)
    with run_folder() as folder, EgressGateway(folder, ["pypi.org"]):
        slow = _connect(folder)
        started = time.monotonic()
        for _ in range(2):  # a byte every 0.6 s: each read is quick, the head never ends
            slow.sendall(b"C")
            time.sleep(0.6)
        assert _answer(slow).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5


def test_every_relay_ends_with_the_run():
    server, accepted = _echo_server()
    port = server.getsockname()[1]
    try:
        with run_folder() as folder:
            with EgressGateway(folder, ["127.0.0.1"], ports=[port]) as gateway:
                client = _connect(folder)
                client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
                assert _answer(client).startswith(b"HTTP/1.1 200")
                for _ in range(50):
                    if accepted:
                        break
                    time.sleep(0.05)
                assert gateway.opened == [f"127.0.0.1:{port}"]
            # The run is over: the gateway closed both sides of the relay.
            accepted[0].settimeout(5)
            assert accepted[0].recv(10) == b""
            assert client.recv(10) == b""
    finally:
        server.close()
