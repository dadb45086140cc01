"""Connecting to a Dask scheduler: bounded in time, and every way it fails said in one line.

``distributed.Client`` bounds the TCP connect (``distributed.comm.timeouts.connect``)
but not the handshake that follows: a port that accepts connections and is no Dask
scheduler (an HTTP server, a bare listening socket) holds it forever. So the address
is first asked what it is over a connection of its own, in an event loop of its own
given a hard deadline (gone with it: no thread or loop is left behind), and the client
is made only once a scheduler answered. An address whose scheme this Dask cannot use
(``tls://`` without TLS settings, ``ucx://`` without distributed-ucxx) is refused
before any connection.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from bisectkit.errors import BadInput


def dask() -> Any:
    """The ``distributed`` module, imported when a cluster is used (an optional extra)."""
    return importlib.import_module("distributed")


def _seconds(key: str) -> float | None:
    """A duration of Dask's configuration (``None``: unset or off)."""
    config = importlib.import_module("dask")
    value = config.config.get(key, None)
    return None if value in (None, False) else float(config.utils.parse_timedelta(value))


def answer_s() -> float:
    """How long the scheduler may take to answer (distributed's TCP timeout, 30 s unless
    configured): longer, and it is lost."""
    return _seconds("distributed.comm.timeouts.tcp") or 30.0


def worker_ttl_s() -> float | None:
    """``distributed.scheduler.worker-ttl`` as configured here (5 minutes by default): how
    long a worker may go without a heartbeat before it is lost."""
    return _seconds("distributed.scheduler.worker-ttl")


def connect(address: str) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``address``; else
    :class:`BadInput` (exit 2) saying why in one line, within twice the connect timeout."""
    _check_scheme(address)
    connect_s = _seconds("distributed.comm.timeouts.connect") or 30.0
    try:
        kind = asyncio.run(asyncio.wait_for(_identity(address, connect_s), 2 * connect_s))
    except TimeoutError:  # asyncio's own (a refused connection is an OSError, sooner)
        kind = None
    except Exception as exc:  # TLS refused, a websocket that is not one, no such host
        raise _unreachable(address, exc) from exc
    hint = "the address 'dask scheduler' printed ('Scheduler at: ...')"
    if isinstance(kind, str) and kind and kind != "Scheduler":
        raise BadInput(f"{address} is a Dask {kind.lower()}, not the scheduler: give {hint}")
    if kind != "Scheduler":
        raise BadInput(f"nothing answered like a Dask scheduler at {address} within "
                       f"{2 * connect_s:g} s: is this {hint}?")
    try:
        return dask().Client(address, timeout=connect_s, set_as_default=False)
    except Exception as exc:
        raise _unreachable(address, exc) from exc


def _unreachable(address: str, exc: Exception) -> BadInput:
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    said = why if isinstance(exc, OSError) else f"{type(exc).__name__}: {why}"
    return BadInput(f"cannot reach the Dask scheduler at {address}: {said}")


async def _identity(address: str, connect_s: float) -> object:
    """What the server at ``address`` says it is (``"Scheduler"``), over a connection of
    its own, closed at once: a ``Client`` would wait forever for a handshake."""
    distributed = dask()
    args = distributed.Security().get_connection_args("client")
    comm = await distributed.comm.connect(address, timeout=connect_s, **args)
    try:
        await comm.write({"op": "identity", "reply": True})
        answer = await comm.read()
    finally:
        comm.abort()  # at once (a close would flush to a peer that may not read)
    return answer.get("type") if isinstance(answer, dict) else None


def _check_scheme(address: str) -> None:
    """Refuse an address this Dask cannot connect to at all, before connecting."""
    scheme = address.partition("://")[0] if "://" in address else "tcp"
    try:
        if scheme in ("tls", "wss") and \
                dask().Security().get_connection_args("client")["ssl_context"] is None:
            raise BadInput(
                f"--scheduler {address}: {scheme}:// needs Dask's TLS settings where bisectkit "
                "runs: distributed.comm.tls.ca-file, .client.cert and .client.key (in "
                "~/.config/dask/*.yaml, or DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
                "..._CLIENT__CERT, ..._CLIENT__KEY)")
        importlib.import_module("distributed.comm.registry").get_backend(scheme).get_connector()
    except BadInput:
        raise
    except Exception as exc:  # a missing transport, a TLS file that cannot be read
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        hint = ("; ucx:// needs distributed-ucxx (pip install distributed-ucxx-cu12, or -cu13), "
                "or use tcp://") if scheme == "ucx" else ""
        raise BadInput(f"--scheduler {address}: this Dask cannot connect over {scheme}:// "
                       f"({type(exc).__name__}: {why}){hint}") from exc
