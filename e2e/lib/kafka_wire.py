"""Raw Kafka requests for the e2e tools, built by hand so that no client's cache or
version choice stands between a test and one broker's own answer: a node's Metadata (all
topics) and the API keys it offers (ApiVersions). The rest of the e2e suite speaks to
brokers through real clients."""
import socket
import struct


def exchange(host, port, api_key, version, body, timeout=2.0, context=None):
    """Sends one request (header v1, client id "oxbow-e2e") and returns its response body
    after the correlation id. With `context` (an ssl.SSLContext) over TLS, the broker's
    certificate checked against `host`."""
    client_id = b"oxbow-e2e"
    request = struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id + body
    with socket.create_connection((host, port), timeout=timeout) as raw:
        with (context.wrap_socket(raw, server_hostname=host) if context else raw) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(request)) + request)
            size = struct.unpack(">i", recv_exact(s, 4))[0]
            reader = Reader(recv_exact(s, size))
    if reader.i32() != 1:
        raise ValueError("the response answers another request")
    return reader


def api_keys(host, port, timeout=10.0):
    """The API keys the broker offers (ApiVersions v0)."""
    reader = exchange(host, port, 18, 0, b"", timeout)
    error = reader.i16()
    if error:
        raise ValueError(f"ApiVersions answered error {error}")
    keys = set()
    for _ in range(reader.i32()):
        keys.add(reader.i16())
        reader.i16()  # min version
        reader.i16()  # max version
    return keys


def metadata_request(host, port, context=None):
    """Metadata v7 of every topic: {"brokers": {id, ...}, "partitions": {(topic, p):
    {error, leader, epoch, replicas, isr}}}. Over TLS with `context`."""
    # Body v7: all topics (null array), allow_auto_topic_creation false.
    reader = exchange(host, port, 3, 7, struct.pack(">i?", -1, False), context=context)
    reader.i32()  # throttle
    brokers = set()
    for _ in range(reader.i32()):
        brokers.add(reader.i32())
        reader.string()
        reader.i32()
        reader.string()
    reader.string()  # cluster id
    reader.i32()  # controller id
    partitions = {}
    for _ in range(reader.i32()):
        reader.i16()
        name = reader.string()
        reader.boolean()
        for _ in range(reader.i32()):
            error, index, leader, epoch = reader.i16(), reader.i32(), reader.i32(), reader.i32()
            replicas, isr = reader.ints(), reader.ints()
            reader.ints()  # offline replicas
            partitions[(name, index)] = {"error": error, "leader": leader, "epoch": epoch,
                                         "replicas": replicas, "isr": isr}
    return {"brokers": brokers, "partitions": partitions}


def recv_exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def i16(self):
        return self.take(">h")

    def i32(self):
        return self.take(">i")

    def boolean(self):
        return self.take(">?")

    def string(self):
        size = self.i16()
        if size < 0:
            return None
        value = self.data[self.at:self.at + size].decode()
        self.at += size
        return value

    def ints(self):
        return [self.i32() for _ in range(self.i32())]
