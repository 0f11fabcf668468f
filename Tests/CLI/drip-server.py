#!/usr/bin/env python3
"""A misbehaving HTTP server for the CLI's fault checks: on 127.0.0.1, an ephemeral port
(printed on the first line of stdout), every request gets its response head at once and
then a 4000-byte JSON body one byte every 0.5 s. Runs until killed."""
import socket
import threading
import time


def serve(connection):
    with connection:
        try:
            connection.recv(65536)
            body = b'{"issuer":"' + b"x" * 3980 + b'"}'
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
            for byte in body:
                connection.sendall(bytes([byte]))
                time.sleep(0.5)
        except OSError:
            pass  # the client gave up: what the check wants


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
