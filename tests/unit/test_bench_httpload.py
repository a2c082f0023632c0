"""bench.httpload, the throughput benchmarks' client, against real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from bench.httpload import Connection, HttpError, drive


@asynccontextmanager
async def aiohttp_server(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def raw_server(answer: bytes) -> AsyncIterator[str]:
    """A server that reads a request's head and writes `answer`, then closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def test_requests_on_one_kept_connection_see_their_own_bodies_and_headers() -> None:
    seen: list[tuple[str, str, bytes, str | None, int]] = []

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        assert request.transport is not None
        seen.append((request.method, request.path, body, request.headers.get("X-Token"),
                     id(request.transport)))
        return web.Response(status=201, body=body[::-1])

    async def main() -> list[tuple[int, bytes]]:
        async with aiohttp_server(echo) as url:
            conn = Connection(url + "/base/", {"X-Token": "t1"})
            out = [await conn.request("POST", f"/p{i}", f"body-{i}".encode() * 300,
                                      "application/cbor") for i in range(3)]
            conn.close()
            return out

    out = asyncio.run(main())
    assert [s for s, _ in out] == [201, 201, 201]
    assert [b for _, b in out] == [(f"body-{i}".encode() * 300)[::-1] for i in range(3)]
    assert [(m, p, t) for m, p, _, t, _ in seen] == [
        ("POST", f"/base/p{i}", "t1") for i in range(3)]
    assert len({transport for *_, transport in seen}) == 1  # kept alive, not reopened


def test_a_chunked_answer_is_read_whole() -> None:
    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for part in (b"one,", b"two," * 1000, b"three"):
            await resp.write(part)
        await resp.write_eof()
        return resp

    async def main() -> tuple[int, bytes]:
        async with aiohttp_server(chunked) as url:
            conn = Connection(url)
            first = await conn.request("GET", "/")
            second = await conn.request("GET", "/")  # the connection was left clean
            conn.close()
            assert first == second
            return first

    assert asyncio.run(main()) == (200, b"one," + b"two," * 1000 + b"three")


def test_a_closed_connection_is_opened_again_for_the_next_request() -> None:
    async def main() -> list[tuple[int, bytes]]:
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        async with raw_server(answer) as url:
            conn = Connection(url)
            return [await conn.request("GET", "/") for _ in range(3)]

    assert asyncio.run(main()) == [(200, b"ok")] * 3


@pytest.mark.parametrize("answer", [
    b"garbage\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # then the server closes
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
])
def test_a_broken_answer_is_an_error_not_a_hang(answer: bytes) -> None:
    async def main() -> None:
        async with raw_server(answer) as url:
            conn = Connection(url)
            with pytest.raises(HttpError):
                await asyncio.wait_for(conn.request("GET", "/"), 10)

    asyncio.run(main())


def test_drive_runs_each_request_once_and_counts_failures() -> None:
    async def status_by_id(request: web.Request) -> web.Response:
        return web.Response(status=500 if request.path.endswith("7") else 200)

    done: list[int] = []

    async def main() -> dict[str, float]:
        async with aiohttp_server(status_by_id) as url:

            async def one(conn: Connection, i: int) -> bool:
                done.append(i)
                status, _ = await conn.request("GET", f"/item/{i}")
                return status == 200

            result = await drive(url, {}, 4, 40, one)
            return result.figures(40)

    figures = asyncio.run(main())
    assert sorted(done) == list(range(40))
    assert figures["failures"] == 4  # 7, 17, 27, 37
    assert figures["wf_per_s"] > 0 and figures["p99_ms"] >= figures["p50_ms"] > 0


def test_only_plain_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http:// URL"):
        Connection("https://127.0.0.1:1/")
