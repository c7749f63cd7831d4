"""A small MCP server for chorus's MCP examples and tests, on the official MCP Python SDK.

Three tools over a fixed set of orders: `lookup_order` (text), `order_photo` (a PNG image) and
`refund_order` (a side effect: it appends a line to the file named by ORDERS_REFUND_LOG, so a
test can see that a refund ran, and how often). An unknown order is a tool error (`isError`).

    python3 examples/mcp/orders_server.py                       # stdio
    python3 examples/mcp/orders_server.py --http --port 8765    # streamable HTTP on 127.0.0.1:8765/mcp

Needs `pip install mcp==2.3.0`.
"""

import argparse
import os
import struct
import zlib

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ORDERS = {
    "A-1001": {"item": "router R7", "quantity": 2, "status": "delivered", "total": "129.00 EUR"},
    "A-1002": {"item": "modem M2", "quantity": 1, "status": "shipped", "total": "59.90 EUR"},
}

server = MCPServer("orders")


def find(order_id: str) -> dict:
    if order_id not in ORDERS:
        raise ToolError(f"no order {order_id}; known orders: {', '.join(sorted(ORDERS))}")
    return ORDERS[order_id]


@server.tool()
def lookup_order(order_id: str) -> str:
    """Looks up an order by its id (such as A-1001): item, quantity, status and total."""
    order = find(order_id)
    return (
        f"Order {order_id}: {order['quantity']} x {order['item']}, {order['status']}, "
        f"total {order['total']}"
    )


@server.tool()
def order_photo(order_id: str) -> Image:
    """A photo of the order's parcel as delivered (PNG)."""
    find(order_id)
    return Image(data=png(2, 2, (200, 120, 40)), format="png")


@server.tool()
def refund_order(order_id: str, reason: str) -> str:
    """Refunds an order in full. Moves money: a person must approve each call."""
    order = find(order_id)
    log = os.environ.get("ORDERS_REFUND_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{order_id}\t{reason}\n")
    return f"Refunded order {order_id}: {order['total']} ({reason})"


def png(width: int, height: int, rgb: tuple) -> bytes:
    """A one-colour RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run()
