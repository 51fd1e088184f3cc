"""Serves Keystone's WSGI application on 127.0.0.1:<port> for the test suite, and with a
second port and KEYSTONE_TLS_CERT/KEYSTONE_TLS_KEY set, the same Keystone over https; with
a third port and KEYSTONE_TLS_CLIENT_CA, over https that takes only clients showing a
certificate that CA signed.

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
mtls_port = int(sys.argv[3]) if len(sys.argv) > 3 else None
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402

one_at_a_time = threading.Lock()


def serialized(environ, start_response):
    with one_at_a_time:
        return list(application(environ, start_response))



def serve_tls(port, client_ca=None):
    secure = make_server("127.0.0.1", port, serialized)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.environ["KEYSTONE_TLS_CERT"], os.environ["KEYSTONE_TLS_KEY"])
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    threading.Thread(target=secure.serve_forever, daemon=True).start()


if tls_port:
    serve_tls(tls_port)
if mtls_port:
    serve_tls(mtls_port, os.environ["KEYSTONE_TLS_CLIENT_CA"])

make_server("127.0.0.1", port, serialized).serve_forever()
