"""The official `mcp` Python client against sleuth's MCP server: initialise, list the tools, call `search`,
`fetch` and `ask`. Over Streamable HTTP (`http URL [KEY]`) or stdio (`stdio SLEUTH_BIN`, which starts
`sleuth mcp` with this process's environment). Prints one JSON line of what it saw; exits non-zero on any failure.

Usage: python3 mcp_session.py http URL [KEY] | stdio SLEUTH_BIN, then QUESTION EXPECTED as the last two arguments
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # mcp 2: headers go on the HTTP client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def http_transport(url, headers):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
except ImportError:  # mcp 1
    from mcp.client.streamable_http import streamablehttp_client

    def http_transport(url, headers):
        return streamablehttp_client(url, headers=headers)


def is_error(result):
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def payload(result):
    assert not is_error(result), result
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if structured is not None:
        return structured
    return json.loads(result.content[0].text)


async def session_calls(session, question, expected):
    await session.initialize()
    tools = sorted(t.name for t in (await session.list_tools()).tools)
    assert {"ask", "fetch", "search"} <= set(tools), tools
    found = payload(await session.call_tool("search", {"query": question}))["results"]
    assert found and all(r["id"] and r["title"] and r["text"] for r in found), found
    doc = payload(await session.call_tool("fetch", {"id": found[0]["id"]}))
    assert doc["id"] == found[0]["id"] and doc["text"], doc
    answer = payload(await session.call_tool("ask", {"question": question}))
    assert expected in (answer.get("short_answer") or ""), answer
    assert answer["citations"] and all(c["text"] for c in answer["citations"]), answer
    missing = await session.call_tool("fetch", {"id": "no-such-document"})
    assert is_error(missing), missing
    return {"tools": tools, "results": len(found), "fetched": doc["title"], "short_answer": answer["short_answer"],
            "citations": len(answer["citations"])}


async def main():
    mode, question, expected = sys.argv[1], sys.argv[-2], sys.argv[-1]
    if mode == "http":
        url = sys.argv[2]
        headers = {"Authorization": "Bearer " + sys.argv[3]} if len(sys.argv) > 5 else None
        async with http_transport(url, headers) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                seen = await session_calls(session, question, expected)
    else:
        server = StdioServerParameters(command=sys.argv[2], args=["mcp"], env=dict(os.environ))
        async with stdio_client(server) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                seen = await session_calls(session, question, expected)
    print(json.dumps(seen))


asyncio.run(main())
