"""The network: HTTP in, between the processes of one host and the nodes of a cluster,
and serving it.

    frontdoor.py      the front door: /{class}/{id}/{path...} to the actor, /_wk/... routes
    connections.py    the clients' connections: head timeout, client faults, listening sockets
    forward.py        the one forwarder: a request passed on by the placement's answer,
                      over the transport it names
    remote_calls.py   the one remote-call object: an actor's call to another process or node
    peers.py          the Unix-socket transport between the processes of `--processes N`
    peer_routes.py    what they answer: the routes only a process's Unix socket serves
    peer_clients.py   the front door's kept connections to the other processes
    cluster.py        serving as a node of a cluster (`--cluster`)
    cluster_door.py   a request's hop to the node that holds its actor
    cluster_calls.py  an actor call's hop to that node
    node_hop.py       the hop both send, at most once, to the current holder
    cluster_auth.py   the header that authenticates what nodes pass each other
    serve.py          `wkhost serve` in one process: start, serve, stop on a signal
    preflight.py      the checks before any compile
    data_lock.py      one server per data directory
    supervisor.py     `--processes N`: start, restart and stop the processes
    cores.py          each process on its own share of the cores
    operator.py, listing.py, audit.py, audit_entry.py, metrics_route.py, console/:
                      the host's own routes (listing, the audit log, metrics, the console)

aiohttp is imported here and nowhere else in the host.
"""
