"""The official `mcp` Python client against sleuth's MCP server at each protocol revision it speaks: 2026-07-28
(stateless, found by `server/discover`, and adopted directly), 2025-11-25 (the initialize handshake, then the
session closed), and 2025-06-18 (a raw initialize, as an older client sends it). Every tool has an output schema
and `ask` returns `structuredContent` with its citations; closing a session logs no error. Prints one JSON line
of what it saw; exits non-zero on any failure.

Usage: python3 mcp_revisions.py URL QUESTION EXPECTED
"""
import asyncio
import base64
import json
import logging
import sys
import urllib.request

from mcp.client import Client

url, question, expected = sys.argv[1:4]


class Complaints(logging.Handler):
    """Every warning or error the client logs."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


complaints = Complaints()
logging.getLogger().addHandler(complaints)
logging.getLogger().setLevel(logging.WARNING)


def field(obj, snake, camel):
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, None)


async def session(mode):
    async with Client(url, mode=mode) as client:
        version = client.protocol_version
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"ask", "search", "fetch"} <= set(tools), sorted(tools)
        for name in ("ask", "search", "fetch"):
            schema = field(tools[name], "output_schema", "outputSchema")
            assert schema and schema.get("type") == "object", (name, schema)
        ask_schema = field(tools["ask"], "output_schema", "outputSchema")
        result = await client.call_tool("ask", {"question": question})
        assert not field(result, "is_error", "isError"), result
        answer = field(result, "structured_content", "structuredContent")
        assert answer, f"no structuredContent: {result}"
        assert expected in (answer.get("short_answer") or ""), answer
        assert answer["citations"] and all(c["text"] and c["id"] for c in answer["citations"]), answer
        seen = {"version": version, "short_answer": answer["short_answer"],
                "ask_schema": sorted(ask_schema.get("properties", {}))}
        if mode == "2026-07-28":
            # A file added through MCP is read as `sleuth ingest docs` reads it, and can be asked about at once.
            page = b"<html><body><nav>Menu</nav><h1>Lighthouse log</h1><p>The Skerry lighthouse keeper is Ada Moll.</p></body></html>"
            added = await client.call_tool("add_document", {"name": "lighthouse.html",
                                                             "content_base64": base64.b64encode(page).decode()})
            assert not field(added, "is_error", "isError"), added
            assert field(added, "structured_content", "structuredContent")["ids"] == ["lighthouse.html"], added
            result = await client.call_tool("ask", {"question": "Who is the Skerry lighthouse keeper?"})
            answer = field(result, "structured_content", "structuredContent")
            assert "Ada Moll" in answer["answer"], answer
            assert any(c["id"] == "lighthouse.html" for c in answer["citations"]), answer
            seen["added"] = answer["citations"][0]["id"]
            broken = await client.call_tool("add_document", {"name": "x.pdf", "content_base64": "bm90IGEgcGRm"})
            assert field(broken, "is_error", "isError"), broken
        return seen


def initialize_2025_06_18():
    """An initialize at 2025-06-18 as raw JSON-RPC; the session it opens is then closed with DELETE."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=30) as response:
        session_id = response.headers.get("Mcp-Session-Id")
        text = response.read().decode()
    data = [line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:")]
    reply = json.loads(data[-1] if data else text)
    version = reply["result"]["protocolVersion"]
    assert session_id, "no session for a 2025-06-18 client"
    close = urllib.request.Request(url, method="DELETE", headers={
        "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"})
    with urllib.request.urlopen(close, timeout=30) as response:
        closed = response.status
    assert closed in (200, 204), closed
    return {"version": version, "closed": closed}


async def main():
    seen = {
        "auto": await session("auto"),
        "2026-07-28": await session("2026-07-28"),
        "legacy": await session("legacy"),
        "raw": initialize_2025_06_18(),
    }
    assert seen["auto"]["version"] == "2026-07-28", seen
    assert seen["legacy"]["version"] == "2025-11-25", seen
    assert seen["raw"]["version"] == "2025-06-18", seen
    assert not complaints.seen, complaints.seen
    print(json.dumps(seen))


asyncio.run(main())
