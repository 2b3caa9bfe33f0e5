#!/usr/bin/env python3
"""Print numbers.jsonl: JSON numbers beyond the range of an f64 (issue 15, item 6).

RFC 8259 section 6 makes `1e400` and a 100,000-digit integer valid JSON, so they are
classified like any number, never MALFORMED_JSON; such a number equals no request id or
error code (DECISIONS.md, 17). Run `python3 gen_numbers.py > numbers.jsonl`; the file
is exactly this script's output (one line holds a 100,000-digit integer).
"""
import json

HUGE = "1" + "0" * 99_999           # 100,000 digits
ENVELOPE = '{"jsonrpc":"2.0","id":1,"result":%s}'
OK_RESULT = '{"content":[{"type":"text","text":"ok"}],"structuredContent":%s}'


def case(name, why, body, expect, **extra):
    line = {"name": name, "rule": "5", "why": why, "status": 200,
            "contentType": extra.pop("contentType", "application/json"), "body": body}
    line.update(extra)
    line["expect"] = expect
    return line


def cases():
    success = {"layer": "application", "outcome": "TOOL_SUCCESS"}
    envelope = {"layer": "protocol", "outcome": "INVALID_ENVELOPE"}
    yield case("num_1e400_in_structured_content",
               "1e400 is a valid JSON number beyond f64 range: the result classifies normally.",
               ENVELOPE % (OK_RESULT % '{"x":1e400,"y":-1e400,"z":1E+999}'), success)
    yield case("num_100000_digit_integer",
               "A 100,000-digit integer is valid JSON: classified normally.",
               ENVELOPE % (OK_RESULT % ('{"n":%s,"m":-%s}' % (HUGE, HUGE))), success)
    yield case("num_underflow_is_zero",
               "1e-400 underflows to 0 (in range): classified normally.",
               ENVELOPE % (OK_RESULT % '{"x":1e-400}'), success)
    yield case("num_big_number_in_content_text_block_field",
               "A big number in an unknown member of a content block changes nothing.",
               ENVELOPE % '{"content":[{"type":"text","text":"ok","_n":1e400}]}', success)
    yield case("num_id_1e400",
               "An id beyond f64 range equals no request id (ids are strings or integers held exactly).",
               '{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}',
               dict(envelope, detailContains="/id is 1e400, but the request's id is 1"))
    yield case("num_id_100000_digits",
               "A 100,000-digit id is another id; the detail shows its first digits and length, not all of it.",
               '{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}' % HUGE,
               dict(envelope, detailContains="a number of 100000 characters, beyond f64 range"))
    yield case("num_id_1e400_expect_large",
               "Nor does it equal the largest request id.",
               '{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}',
               envelope, expectId=9223372036854775807)
    yield case("num_error_code_1e400",
               "An error code beyond f64 range is not an integer code the client can hold: the envelope is invalid.",
               '{"jsonrpc":"2.0","id":1,"error":{"code":-1e400,"message":"x"}}',
               dict(envelope, detailContains="/error/code is -1e400, out of range"))
    yield case("num_is_error_1e400",
               "isError must be a boolean; a big number is a number.",
               ENVELOPE % '{"content":[],"isError":1e400}',
               {"layer": "protocol", "outcome": "INVALID_TOOL_RESULT"})
    yield case("num_big_then_syntax_error",
               "After a big number the parser goes on: a later syntax error is still MALFORMED_JSON, at its own place.",
               '{"jsonrpc":"2.0","id":1,"result":{"content":[],"n":1e400,}}',
               {"layer": "protocol", "outcome": "MALFORMED_JSON", "detailContains": "trailing comma at line 1 column 58"})
    yield case("num_invalid_token_with_big_start",
               "1e400.5 is not a JSON number, however its start overflows.",
               ENVELOPE % (OK_RESULT % '{"x":1e400.5}'),
               {"layer": "protocol", "outcome": "MALFORMED_JSON"})
    yield case("num_big_in_string_is_a_string",
               "Inside a string, 1e400 is text (and an escaped quote does not end the string).",
               ENVELOPE % (OK_RESULT % '{"s":"\\"1e400","x":1e400}'), success)
    yield case("num_sse_event_with_1e400",
               "An SSE response event holding a big number classifies normally.",
               "event: message\ndata: " + ENVELOPE % (OK_RESULT % '{"x":1e400}') + "\n\n",
               success, contentType="text/event-stream")
    yield case("num_schema_maximum_sees_big_number",
               "For outputSchema, a big number is beyond every finite bound: maximum 10 fails.",
               ENVELOPE % (OK_RESULT % '{"x":1e400}'),
               {"layer": "protocol", "outcome": "INVALID_TOOL_RESULT", "detailContains": "/structuredContent/x"},
               outputSchema={"type": "object", "properties": {"x": {"type": "number", "maximum": 10}}})
    yield case("num_schema_type_integer_accepts_big_integer",
               "A 100,000-digit integer is an integer (and a number) for outputSchema.",
               ENVELOPE % (OK_RESULT % ('{"x":%s}' % HUGE)), success,
               outputSchema={"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}})
    yield case("num_schema_minimum_sees_negative_big_number",
               "-1e400 is below every finite bound: minimum 0 fails.",
               ENVELOPE % (OK_RESULT % '{"x":-1e400}'),
               {"layer": "protocol", "outcome": "INVALID_TOOL_RESULT"},
               outputSchema={"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}})


for c in cases():
    print(json.dumps(c, ensure_ascii=False))
