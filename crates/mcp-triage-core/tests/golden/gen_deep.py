#!/usr/bin/env python3
"""Print the deep-nesting golden cases (they live in json.jsonl) as JSON Lines.

The bodies are too long to write by hand; this script is the record of how they
were made.  Run `python3 gen_deep.py` and compare with the `json_deep_*` lines of
json.jsonl.
"""
import json


def j(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False)


def nested_objects(n):
    """n levels of {"a": ...}, innermost {} (the innermost object is level n)."""
    return '{"a":' * (n - 1) + "{}" + "}" * (n - 1)


def nested_arrays(n):
    """n levels of [...], innermost []."""
    return "[" * n + "]" * n


def envelope_with_structured(sc_text):
    return ('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"deep"}],'
            '"structuredContent":' + sc_text + '}}')


def cases():
    out = []
    out.append({
        "name": "json_deep_1000_objects_in_structured_content", "rule": "5",
        "why": "structuredContent nested 1,000 objects deep is ordinary JSON and must classify normally.",
        "status": 200, "contentType": "application/json",
        "body": envelope_with_structured(nested_objects(1000)),
        "expect": {"layer": "application", "outcome": "TOOL_SUCCESS"},
    })
    out.append({
        "name": "json_deep_1000_arrays_in_structured_content", "rule": "5",
        "why": "structuredContent nested 1,000 arrays deep (any JSON in the lenient default) classifies normally.",
        "status": 200, "contentType": "application/json",
        "body": envelope_with_structured(nested_arrays(1000)),
        "expect": {"layer": "application", "outcome": "TOOL_SUCCESS"},
    })
    out.append({
        "name": "json_deep_9000_objects_in_structured_content", "rule": "5",
        "why": "About 9,000 levels is still under the 10,000 depth limit, so it classifies normally without a stack overflow.",
        "status": 200, "contentType": "application/json",
        "body": envelope_with_structured(nested_objects(9000)),
        "expect": {"layer": "application", "outcome": "TOOL_SUCCESS"},
    })
    out.append({
        "name": "json_deep_10001_arrays_in_structured_content", "rule": "5",
        "why": "Nesting deeper than 10,000 levels hits the maxDepth limit.",
        "status": 200, "contentType": "application/json",
        "body": envelope_with_structured(nested_arrays(10001)),
        "expect": {"layer": "transport", "outcome": "LIMIT_EXCEEDED", "limit": {"name": "maxDepth"}},
    })
    out.append({
        "name": "json_deep_10001_objects_in_structured_content", "rule": "5",
        "why": "10,001 nested objects also hit the maxDepth limit.",
        "status": 200, "contentType": "application/json",
        "body": envelope_with_structured(nested_objects(10001)),
        "expect": {"layer": "transport", "outcome": "LIMIT_EXCEEDED", "limit": {"name": "maxDepth"}},
    })
    out.append({
        "name": "json_deep_10001_in_error_data", "rule": "5",
        "why": "The depth limit applies to the whole body, including error.data of a JSON-RPC error.",
        "status": 200, "contentType": "application/json",
        "body": '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"deep","data":' + nested_arrays(10001) + '}}',
        "expect": {"layer": "transport", "outcome": "LIMIT_EXCEEDED", "limit": {"name": "maxDepth"}},
    })
    out.append({
        "name": "json_deep_10001_in_sse_event", "rule": "5",
        "why": "An SSE event whose data nests deeper than 10,000 levels hits the maxDepth limit.",
        "status": 200, "contentType": "text/event-stream",
        "body": "data: " + envelope_with_structured(nested_arrays(10001)) + "\n\n",
        "expect": {"layer": "transport", "outcome": "LIMIT_EXCEEDED", "limit": {"name": "maxDepth"}},
    })
    out.append({
        "name": "json_deep_1000_in_sse_event", "rule": "5",
        "why": "An SSE event whose data nests 1,000 levels deep classifies normally.",
        "status": 200, "contentType": "text/event-stream",
        "body": "data: " + envelope_with_structured(nested_objects(1000)) + "\n\n",
        "expect": {"layer": "application", "outcome": "TOOL_SUCCESS", "stream": {"events": 1, "terminal": True}},
    })
    return out


if __name__ == "__main__":
    for c in cases():
        print(json.dumps(c, ensure_ascii=False))
