#!/usr/bin/env python3
"""An HTTPS server on a loopback port that answers every POST wrongly, for DoctorEndpointTests.

    python3 stub-server.py CERT KEY MODE    (MODE: 301, 405 or html)

Prints the port it listens on, then serves until killed.
"""
import http.server
import ssl
import sys

cert, key, mode = sys.argv[1:4]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if mode == "301":
            self.send_response(301)
            self.send_header("Location", "https://www.example.com" + self.path)
            body = b""
        elif mode == "405":
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            body = b"<html><body>405 Not Allowed</body></html>"
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            body = b"<html><body>Welcome</body></html>"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
