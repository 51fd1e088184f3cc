"""Serves Keystone's WSGI application on 127.0.0.1:<port> for the test suite.

Keystone parses sys.argv with oslo.config, so the port is taken out first. One request
at a time: Keystone's SQLite database does not take concurrent writers.
"""

import sys
from wsgiref.simple_server import make_server

port = int(sys.argv[1])
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402

make_server("127.0.0.1", port, application).serve_forever()
