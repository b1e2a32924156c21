"""
How clients reach the HTTP face: in memory, in-process without HTTP framing, or on a real socket.

``inmemory`` connects any aiohttp client to an application with no sockets; ``direct`` calls the
application's request handling without the HTTP framing; ``serving`` serves it on 127.0.0.1 over
HTTP(S) for kubectl and other processes, with throw-away certificates (``certs``) and a kubeconfig
(``kubeconfig``).
"""
