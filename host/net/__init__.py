"""The network: HTTP in, between the processes of one host, and serving it.

    frontdoor.py     the front door: /{class}/{id}/{path...} to the actor, /_wk/... routes
    connections.py   the clients' connections: head timeout, client faults, listening sockets
    peers.py         what the processes of `--processes N` ask each other (Peers: an
                     actor's call; forward, list_actors, the test clock)
    peer_routes.py   what they answer: the routes only a process's Unix socket serves
    peer_clients.py  the front door's kept connections to the other processes
    serve.py         `wkhost serve` in one process: start, serve, stop on a signal
    preflight.py     the checks before any compile
    data_lock.py     one server per data directory
    supervisor.py    `--processes N`: start, restart and stop the processes

aiohttp is imported here and nowhere else in the host.
"""
