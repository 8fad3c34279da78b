"""A client that half-closes (shutdown(SHUT_WR)) right after sending its pipelined requests is
taken to have gone, as nginx takes it: on reading, a half-close and a hang-up look the same,
and a hang-up must cancel its request (test_generate.py). So the model call in flight is
cancelled; its 499 and the answers to the rest, which need no waiting, are still written in
order while the socket takes them, and then the server closes."""
import json
import socket

from isvtest import RawConn


def req(path, body=None):
    if body is None:
        return ("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode()
    return ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (path, len(body))).encode() + body


def test_half_closed_client_is_gone_but_gets_every_pipelined_answer(demo):
    slow = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32",
                                   "data": [150]}]}).encode()
    with RawConn(demo) as c:
        # the slow request is in flight when the rest, and then the EOF, arrive
        c.send(req("/v2/models/slow/infer", slow) + req("/v2/health/live") + req("/v2"))
        c.sock.shutdown(socket.SHUT_WR)
        first = c.read_response()
        assert first.status == 499 and "cancelled" in first.json()["error"], first
        second = c.read_response()
        assert second.status == 200 and second.json() == {"live": True}, second
        third = c.read_response()
        assert third.status == 200 and "extensions" in third.json(), third
        c.wait_closed(2.0)
