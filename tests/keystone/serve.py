"""Serves Keystone's WSGI application on 127.0.0.1:<port> for the test suite, and with a
second port and KEYSTONE_TLS_CERT/KEYSTONE_TLS_KEY set, the same Keystone over https.

Keystone parses sys.argv with oslo.config, so the ports are taken out first. One request
at a time (across both listeners): Keystone's SQLite database does not take concurrent
writers.
"""

import os
import ssl
import sys
import threading
from wsgiref.simple_server import make_server

port = int(sys.argv[1])
tls_port = int(sys.argv[2]) if len(sys.argv) > 2 else None
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402

one_at_a_time = threading.Lock()


def serialized(environ, start_response):
    with one_at_a_time:
        return list(application(environ, start_response))


if tls_port:
    secure = make_server("127.0.0.1", tls_port, serialized)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["KEYSTONE_TLS_CERT"], os.environ["KEYSTONE_TLS_KEY"])
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    threading.Thread(target=secure.serve_forever, daemon=True).start()

make_server("127.0.0.1", port, serialized).serve_forever()
