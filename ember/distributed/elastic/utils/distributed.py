"""Ports, endpoints and the TCP stores the agents share."""
from __future__ import annotations

import socket
from datetime import timedelta

__all__ = ["get_free_port", "parse_rendezvous_endpoint", "is_local_host", "create_c10d_store"]


def get_free_port() -> int:
    """A TCP port free on this host right now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def parse_rendezvous_endpoint(endpoint: str | None, default_port: int):
    """``"host:port"`` / ``"host"`` / ``"[::1]:port"`` -> ``(host, port)``."""
    endpoint = (endpoint or "").strip()
    if not endpoint:
        return "localhost", default_port
    if endpoint.startswith("["):
        host, _, rest = endpoint[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif endpoint.count(":") == 1:
        host, port = endpoint.split(":")
    else:
        host, port = endpoint, ""
    if not host:
        raise ValueError(f"The hostname of the rendezvous endpoint '{endpoint}' must be a "
                         "dot-separated list of labels, an IPv4 address, or an IPv6 address.")
    if not port:
        return host, default_port
    if not port.isdigit() or not 0 <= int(port) < 2 ** 16:
        raise ValueError(f"The port number of the rendezvous endpoint '{endpoint}' must be "
                         "an integer between 0 and 65536.")
    return host, int(port)


def is_local_host(host: str) -> bool:
    """Whether ``host`` names this machine."""
    if host in ("localhost", "127.0.0.1", "::1", "0.0.0.0", socket.gethostname(),
                socket.getfqdn()):
        return True
    try:
        addrs = {a[4][0] for a in socket.getaddrinfo(host, None)}
        local = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return False
    return bool(addrs & (local | {"127.0.0.1", "::1"}))


def create_c10d_store(host: str, port: int, is_server: bool, timeout: float = 60.0):
    """An ``ember.distributed.TCPStore`` at ``host:port``: its server if ``is_server``."""
    from ember.distributed.store import TCPStore
    return TCPStore(host, port, is_master=is_server, timeout=timedelta(seconds=timeout),
                    wait_for_workers=False)


def host_or_join_store(host: str, port: int, timeout: float = 60.0):
    """Serve the store at ``host:port`` if this machine can bind it, else connect to it.
    Returns ``(store, is_server)``."""
    if is_local_host(host):
        try:
            return create_c10d_store(host, port, True, timeout), True
        except Exception:  # noqa: BLE001 - port taken: another agent hosts it
            pass
    return create_c10d_store(host, port, False, timeout), False
