"""A minimal HTTP/2 client over a raw socket, for the edge cases no ordinary client produces
(several REST and gRPC streams on one connection, RST_STREAM mid-call, a tiny flow-control
window, concurrent-stream limits, CONTINUATION frames, frames the server must refuse).

Header blocks are ENCODED here (literal header fields without indexing, no Huffman: always
valid HPACK) and DECODED with the HPACK inflater of the system's libnghttp2 through ctypes
(the server is free to use Huffman codes and its dynamic table).
"""
import ctypes
import ctypes.util
import socket
import struct
import time

# frame types
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
# settings
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE, \
    MAX_HEADER_LIST_SIZE = range(1, 7)
# error codes
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED, \
    FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = range(9)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


# ------------------------------------------------------------------------------------------
# HPACK
# ------------------------------------------------------------------------------------------
def hpack_int(value, prefix_bits, first_byte_flags=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte_flags | value])
    out = [first_byte_flags | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_encode(headers):
    """Literal header field without indexing, new name, no Huffman (RFC 7541 §6.2.2)."""
    out = b""
    for name, value in headers:
        n = name.encode("latin-1") if isinstance(name, str) else name
        v = value.encode("utf-8") if isinstance(value, str) else value
        out += b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v
    return out


class _NV(ctypes.Structure):
    _fields_ = [("name", ctypes.POINTER(ctypes.c_uint8)), ("value", ctypes.POINTER(ctypes.c_uint8)),
                ("namelen", ctypes.c_size_t), ("valuelen", ctypes.c_size_t),
                ("flags", ctypes.c_uint8)]


_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(ctypes.util.find_library("nghttp2") or "libnghttp2.so.14")
        lib.nghttp2_hd_inflate_new.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.nghttp2_hd_inflate_new.restype = ctypes.c_int
        lib.nghttp2_hd_inflate_del.argtypes = [ctypes.c_void_p]
        lib.nghttp2_hd_inflate_del.restype = None
        lib.nghttp2_hd_inflate_hd2.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NV),
                                               ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
                                               ctypes.c_size_t, ctypes.c_int]
        lib.nghttp2_hd_inflate_hd2.restype = ctypes.c_ssize_t
        lib.nghttp2_hd_inflate_end_headers.argtypes = [ctypes.c_void_p]
        lib.nghttp2_hd_inflate_end_headers.restype = ctypes.c_int
        _LIB = lib
    return _LIB


class Inflater:
    EMIT, FINAL = 0x02, 0x01

    def __init__(self):
        self.lib = _lib()
        self.ptr = ctypes.c_void_p()
        rc = self.lib.nghttp2_hd_inflate_new(ctypes.byref(self.ptr))
        assert rc == 0, "nghttp2_hd_inflate_new: %d" % rc

    def decode(self, block):
        buf = ctypes.create_string_buffer(block, len(block))
        base = ctypes.addressof(buf)
        off, out = 0, []
        while True:
            nv, flags = _NV(), ctypes.c_int(0)
            rv = self.lib.nghttp2_hd_inflate_hd2(self.ptr, ctypes.byref(nv), ctypes.byref(flags),
                                                 base + off, len(block) - off, 1)
            if rv < 0:
                raise AssertionError("the server sent an invalid HPACK block (%d): %r"
                                     % (rv, block[:200]))
            off += rv
            if flags.value & self.EMIT:
                out.append((ctypes.string_at(nv.name, nv.namelen).decode("latin-1"),
                            ctypes.string_at(nv.value, nv.valuelen).decode("latin-1")))
            if flags.value & self.FINAL:
                self.lib.nghttp2_hd_inflate_end_headers(self.ptr)
                return out
            if rv == 0 and not flags.value & self.EMIT:
                raise AssertionError("HPACK decoding made no progress at %d of %r" % (off, block))

    def __del__(self):
        if getattr(self, "ptr", None):
            self.lib.nghttp2_hd_inflate_del(self.ptr)
            self.ptr = None


# ------------------------------------------------------------------------------------------
# Frames and the connection
# ------------------------------------------------------------------------------------------
def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid & 0x7FFFFFFF) + payload


def settings_payload(settings):
    return b"".join(struct.pack(">HI", k, v) for k, v in settings.items())


class Stream:
    def __init__(self, sid):
        self.sid = sid
        self.blocks = []      # decoded header blocks: [response headers, (trailers)]
        self.data = b""
        self.ended = False    # END_STREAM received
        self.reset = None     # RST_STREAM error code
        self.end_time = None
        self.window = None    # our send window

    @property
    def done(self):
        return self.ended or self.reset is not None

    @property
    def headers(self):
        return self.blocks[0] if self.blocks else []

    @property
    def trailers(self):
        return self.blocks[-1] if len(self.blocks) > 1 else (self.blocks[0] if self.ended and
                                                              self.blocks else [])

    def header(self, name, block=None):
        for k, v in (self.headers if block is None else block):
            if k == name:
                return v
        return None

    @property
    def status(self):
        s = self.header(":status")
        return None if s is None else int(s)

    def grpc(self, name):
        """A grpc-* field from the trailers (or a trailers-only response)."""
        for k, v in self.trailers:
            if k == name:
                return v
        return None

    def grpc_messages(self):
        """The length-prefixed messages of a gRPC response body: [(flag, bytes)]."""
        out, i, d = [], 0, self.data
        while i < len(d):
            assert i + 5 <= len(d), "truncated gRPC prefix: %r" % d[i:]
            flag, n = d[i], struct.unpack(">I", d[i + 1:i + 5])[0]
            assert i + 5 + n <= len(d), "truncated gRPC message (%d of %d)" % (len(d) - i - 5, n)
            out.append((flag, d[i + 5:i + 5 + n]))
            i += 5 + n
        return out

    def __repr__(self):
        return "<stream %d blocks=%r data=%r ended=%s reset=%s>" % (
            self.sid, self.blocks, self.data[:200], self.ended, self.reset)


class ConnectionClosed(Exception):
    pass


class H2Conn:
    """settings: our SETTINGS; auto_window: grant WINDOW_UPDATE for every DATA received."""

    def __init__(self, demo, settings=None, auto_window=True, timeout=5.0, preface=True):
        self.sock = socket.create_connection((demo.host, demo.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""
        self.inflater = Inflater()
        self.streams = {}
        self.server_settings = {}
        self.settings_acked = False
        self.goaway = None
        self.closed = False
        self.auto_window = auto_window
        self.frames = []   # every frame received: (type, flags, sid, payload)
        self.pings = []
        self.auto_ping_ack = True   # False: PINGs the server sends wait in held_pings
        self.held_pings = []
        self.goaways = []  # every GOAWAY: (last stream id, code)
        self.next_sid = 1
        self.conn_window = 65535
        self.peer_initial_window = 65535
        self.peer_max_frame = 16384
        self._cont = None  # (sid, flags, block so far) while a header block is open
        if preface:
            self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings_payload(settings or {})))

    # ---- sending
    def send(self, data):
        self.sock.sendall(data)

    def request(self, headers, body=None, end_stream=None, sid=None, split_headers=None):
        """Open a stream. end_stream defaults to True when body is None. split_headers=N cuts
        the header block into a HEADERS and CONTINUATION frames of N bytes."""
        if sid is None:
            sid = self.next_sid
            self.next_sid += 2
        st = self.streams.setdefault(sid, Stream(sid))
        st.window = self.peer_initial_window
        block = hpack_encode(headers)
        if end_stream is None:
            end_stream = body is None
        hflags = END_STREAM if (end_stream and body is None) else 0
        if split_headers is None and len(block) > self.peer_max_frame:
            split_headers = self.peer_max_frame
        if split_headers:
            parts = [block[i:i + split_headers] for i in range(0, len(block), split_headers)]
            out = frame(HEADERS, hflags | (END_HEADERS if len(parts) == 1 else 0), sid, parts[0])
            for i, p in enumerate(parts[1:], 1):
                out += frame(CONTINUATION, END_HEADERS if i == len(parts) - 1 else 0, sid, p)
            self.send(out)
        else:
            self.send(frame(HEADERS, hflags | END_HEADERS, sid, block))
        if body is not None:
            self.send_data(sid, body, end_stream=end_stream)
        return sid

    def send_data(self, sid, data, end_stream=False):
        """DATA frames within the peer's max frame size and flow-control windows."""
        st = self.streams[sid]
        if not data:
            self.send(frame(DATA, END_STREAM if end_stream else 0, sid))
            return
        i = 0
        while i < len(data):
            deadline = time.monotonic() + self.timeout
            while min(self.conn_window, st.window) <= 0:
                if time.monotonic() > deadline:
                    raise AssertionError("no flow-control window from the server for %.0f s "
                                         "(stream %d)" % (self.timeout, sid))
                self.read_frame(deadline - time.monotonic())
            n = min(len(data) - i, self.peer_max_frame, self.conn_window, st.window)
            last = i + n == len(data)
            self.send(frame(DATA, END_STREAM if (last and end_stream) else 0, sid, data[i:i + n]))
            self.conn_window -= n
            st.window -= n
            i += n

    def _send_quiet(self, data):
        """Automatic replies (ACKs, window updates): a peer that already closed is not an error
        here; the next read reports the close."""
        try:
            self.sock.sendall(data)
        except OSError:
            pass

    def rst(self, sid, code=CANCEL):
        self.send(frame(RST_STREAM, 0, sid, struct.pack(">I", code)))

    def window_update(self, sid, n):
        self.send(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", n)))

    def ping(self, data=b"pingpong"):
        self.send(frame(PING, 0, 0, data))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # ---- receiving
    def _fill(self, timeout):
        self.sock.settimeout(max(0.001, timeout))
        try:
            chunk = self.sock.recv(1 << 20)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = True
            raise ConnectionClosed("the server closed the connection (goaway=%r)" % (self.goaway,))
        self.buf += chunk

    def read_frame(self, timeout=None):
        """Read and process one frame; returns it, or None on timeout."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._fill(left)
        except socket.timeout:
            return None
        n = int.from_bytes(self.buf[:3], "big")
        ftype, flags = self.buf[3], self.buf[4]
        sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
        payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
        f = (ftype, flags, sid, payload)
        self.frames.append(f)
        self._process(f)
        return f

    def _strip(self, flags, payload, priority_ok):
        if flags & PADDED:
            pad = payload[0]
            payload = payload[1:len(payload) - pad]
        if priority_ok and flags & PRIORITY_FLAG:
            payload = payload[5:]
        return payload

    def _process(self, f):
        ftype, flags, sid, payload = f
        if self._cont is not None and ftype != CONTINUATION:
            raise AssertionError("frame %d inside an open header block" % ftype)
        if ftype == SETTINGS:
            if flags & ACK:
                self.settings_acked = True
                return
            for i in range(0, len(payload), 6):
                k, v = struct.unpack(">HI", payload[i:i + 6])
                self.server_settings[k] = v
                if k == INITIAL_WINDOW_SIZE:
                    delta = v - self.peer_initial_window
                    self.peer_initial_window = v
                    for st in self.streams.values():
                        if st.window is not None:
                            st.window += delta
                elif k == MAX_FRAME_SIZE:
                    self.peer_max_frame = v
            self._send_quiet(frame(SETTINGS, ACK, 0))
        elif ftype == PING:
            if flags & ACK:
                self.pings.append(payload)
            elif self.auto_ping_ack:
                self._send_quiet(frame(PING, ACK, 0, payload))
            else:
                self.held_pings.append(payload)
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = (last & 0x7FFFFFFF, code, payload[8:])
            self.goaways.append((last & 0x7FFFFFFF, code))
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
            if sid == 0:
                self.conn_window += inc
            elif sid in self.streams and self.streams[sid].window is not None:
                self.streams[sid].window += inc
        elif ftype == RST_STREAM:
            st = self.streams.setdefault(sid, Stream(sid))
            st.reset = struct.unpack(">I", payload)[0]
            st.end_time = time.monotonic()
        elif ftype in (HEADERS, CONTINUATION):
            if ftype == HEADERS:
                block, hflags = self._strip(flags, payload, True), flags
            else:
                assert self._cont is not None and self._cont[0] == sid, "stray CONTINUATION"
                block, hflags = self._cont[2] + payload, self._cont[1]
            if not flags & END_HEADERS:
                self._cont = (sid, hflags, block)
                return
            self._cont = None
            st = self.streams.setdefault(sid, Stream(sid))
            st.blocks.append(self.inflater.decode(block))
            if hflags & END_STREAM:
                st.ended = True
                st.end_time = time.monotonic()
        elif ftype == DATA:
            st = self.streams.setdefault(sid, Stream(sid))
            body = self._strip(flags, payload, False)
            st.data += body
            if self.auto_window and payload:
                self._send_quiet(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))))
                if not flags & END_STREAM:
                    self._send_quiet(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", len(payload))))
            if flags & END_STREAM:
                st.ended = True
                st.end_time = time.monotonic()

    def wait(self, sid, timeout=None):
        """Process frames until stream sid ends (END_STREAM or RST_STREAM)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        st = self.streams.setdefault(sid, Stream(sid))
        while not st.done:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("stream %d did not end within the timeout: %r" % (sid, st))
            self.read_frame(left)
        return st

    def pump(self, duration):
        """Process whatever arrives during `duration` seconds."""
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            self.read_frame(deadline - time.monotonic())

    def wait_closed(self, timeout):
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self.read_frame(deadline - time.monotonic())
        except ConnectionClosed:
            return True
        return False


def rest_headers(demo, method, path, extra=()):
    return [(":method", method), (":scheme", "http"), (":path", path),
            (":authority", "%s:%d" % (demo.host, demo.port))] + list(extra)


def grpc_headers(demo, method_path, extra=()):
    return rest_headers(demo, "POST", method_path,
                        [("content-type", "application/grpc"), ("te", "trailers")] + list(extra))
