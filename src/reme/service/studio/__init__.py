"""Studio: the web page served at `/studio` by the HTTP service (imported only by `reme start`).

The page is static, hand-written JavaScript and CSS shipped as package data; every read and write
it makes is a `POST /<job>` like any other client. The server side adds only what a browser needs:
the assets, a login that turns the access token into a session cookie, CSRF checks for requests
made with that cookie, security headers, and a stream of file-change events.
"""
