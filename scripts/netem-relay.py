#!/usr/bin/env python3
"""A TCP relay that delays what it carries: scripts/netem.sh's delay where the kernel has no
sch_netem (tc netem). Each chunk read on one side is written to the other DELAY ms later, in
order, in both directions (a round trip gains 2 x DELAY). The delay is read from DELAY_FILE
(milliseconds, one number) every second, so it changes without reconnecting.

    netem-relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_FILE
"""
import asyncio
import sys
import time

listen_host, listen_port, target_host, target_port, delay_file = sys.argv[1:6]
delay = 0.0


async def watch_delay():
    global delay
    while True:
        try:
            with open(delay_file) as f:
                delay = max(0.0, float(f.read().strip() or 0) / 1000)
        except (OSError, ValueError):
            delay = 0.0
        await asyncio.sleep(1)


async def pump(reader, writer):
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    sender = asyncio.ensure_future(send())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((time.monotonic() + delay, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await sender
        writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def relay(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection(target_host, int(target_port))
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer))
    for writer in (client_writer, server_writer):
        writer.close()


async def main():
    asyncio.ensure_future(watch_delay())
    server = await asyncio.start_server(relay, listen_host, int(listen_port))
    print(f"relaying {listen_host}:{listen_port} to {target_host}:{target_port}", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
