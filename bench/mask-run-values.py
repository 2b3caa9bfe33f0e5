#!/usr/bin/env python3
"""For bench/format-identity.sh: compares two runs' records, capture lines, journal and demo
records byte for byte, after masking the values that differ from run to run.

    mask-run-values.py OLD_DIR NEW_DIR

Masking works on the raw text of each line (regular expressions over `"name":value`), never by
parsing and re-writing it, so that key order, number forms and escapes are compared as written.
What is masked: clock readings (times, durations, receive and end stamps, the capture's offsets),
the ids a run draws at random (record ids, session ids, request states, task ids, event ids made
of them), loopback ports, Date headers and the backoff delays that carry jitter. Lines are then
sorted, because one call at a time still leaves GET streams and notifications to interleave with
POSTs in either order. Exit 1 and a diff of the first differences when a file differs.
"""

import difflib
import itertools
import json
import re
import sys

# `"name":` followed by a JSON string or number: the value is replaced by the name's mask.
STRING_KEYS = [
    "time", "at", "recordId", "originalRecordId", "viaRecordId", "retryOf", "linksTo", "inReplyTo",
    "sessionId", "session", "mcp-session-id", "date", "requestState", "taskId", "target",
    "last-event-id", "lastEventId", "resource_metadata", "host", "x-forwarded-host",
]
NUMBER_KEYS = [
    "durationMs", "receivedMs", "endedMs", "headMs", "delayMs", "retryAfterMs", "retryMs",
]
PATTERNS = [
    (re.compile(r'("(?:%s)":)"(?:[^"\\]|\\.)*"' % "|".join(map(re.escape, STRING_KEYS))), r'\1"*"'),
    (re.compile(r'("(?:%s)":)-?[0-9][0-9.eE+-]*' % "|".join(map(re.escape, NUMBER_KEYS))), r"\g<1>0"),
    # a capture's chunk is [offset ms, bytes]; its sequence number follows the order of arrival
    (re.compile(r"\[[0-9.]+,([0-9]+)\]"), r"[0,\1]"),
    (re.compile(r'"seq":[0-9]+'), '"seq":0'),
    # a record id inside a text (a retry's warning names the attempt before it)
    (re.compile(r"\b[0-9a-f]{3,8}-[0-9a-f]{8,16}-[0-9]+\b"), "RID"),
    # signed request states (payload.signature, base64url), also inside escaped bodies
    (re.compile(r"[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{40,}"), "SIGNED"),
    # The proxy links a call to an earlier one of the same client, tool and arguments that ended
    # shortly before: the demo's rows call the same tools one after another, so whether a row's
    # call falls inside an earlier row's window depends on timing. The linkage's values are
    # masked (its presence and numbers), not the format of the rest of the record.
    (re.compile(r'"retryOrigin":"client","retryOf":"\*",'), ""),
    (re.compile(r'"attempt":[0-9]+'), '"attempt":N'),
    (re.compile(r'"retryOrigin":"business_logic","retryOf":"\*"'), '"retryOrigin":"none"'),
    (re.compile(r'\{"code":"UNSAFE_RETRY","detail":"(?:[^"\\]|\\.)*"\},?'), ""),
    # A client that closes its connection as soon as it has the response races the upstream's
    # end of the same stream: the proxy sees one or the other first, so "cancelled" and the
    # capture's end word flip between runs, and so do the counts of a stream cut mid-way.
    (re.compile(r'"cancelled":true,'), ""),
    (re.compile(r',"cancelled":true(?=\})'), ""),
    (re.compile(r'"end":"(?:client_cancelled|complete)"'), '"end":"*"'),
    (re.compile(r'"(events|notifications|serverRequests|otherResponses|ignoredEvents|'
                r'primingEvents|comments|bytes)":[0-9]+'), r'"\1":0'),
    (re.compile(r"after [0-9]+ event\(s\) \([0-9]+ notification\(s\), [0-9]+ server request"),
     "after N event(s) (N notification(s), N server request"),
    # ... and so does which of the two the verdict names first (seen flipping between two runs
    # of one build, in both directions)
    (re.compile(r"the client closed the connection after|the stream ended after"),
     "the stream ended or the client closed after"),
    # what is left of a list that held only that warning: a record leaves an empty list out, a
    # call record writes it, so an empty list and none compare equal
    (re.compile(r'"warnings":\[\],'), ""),
    # the client's backoff draws jitter
    (re.compile(r"[0-9]+ ms backoff"), "N ms backoff"),
    (re.compile(r"[0-9]+ ms with jitter"), "N ms with jitter"),
    (re.compile(r"127\.0\.0\.1:[0-9]+"), "127.0.0.1:PORT"),
    # session ids (32 hex digits) and the client's record ids (16) inside bodies and details;
    # an arguments hash (64) is the same on every run and stays as it is
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), "HEX32"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])"), "HEX16"),
    (re.compile(r"(?:task|req|state)[-_][A-Za-z0-9_-]{8,}"), "ID"),
    (re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT"), "DATE"),
    (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"), "TIME"),
    (re.compile(r"after [0-9]+ ?ms"), "after N ms"),
    (re.compile(r"in [0-9]+ ?ms"), "in N ms"),
]

FILES = ["records", "capture", "journal", "demo"]

# A standalone GET stream carries whatever the kitchen had to say while it was open (list changes,
# resource updates, nothing), until the client closed it: its record and capture line are
# compared by shape (names, their order, the kinds of values), not by values.
GET_STREAM = re.compile(r'"httpMethod":"GET"|"request":\{"method":"GET"')
STRING_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"(?!:)')
NUMBER_VALUE = re.compile(r"(?<=[:\[,])-?[0-9][0-9.eE+-]*")
CHUNKS = re.compile(r'"chunks":\[(?:\[[0-9, ]*\],?)*\]')


def shape(line):
    line = CHUNKS.sub('"chunks":[]', line)
    return NUMBER_VALUE.sub("0", STRING_VALUE.sub('"s"', line))


def masked(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            for pattern, replacement in PATTERNS:
                line = pattern.sub(replacement, line)
            if GET_STREAM.search(line):
                line = shape(line)
            lines.append(line)
    return sorted(lines)


def member_paths(value, path, into):
    """Every member name's path in a parsed line (`.a.b`, `[]` for list items), with the order
    of the names of each object, so that two builds' formats can be told apart from their values."""
    if isinstance(value, dict):
        into.setdefault("orders", set()).add((path, tuple(value)))
        for name, member in value.items():
            # objects keyed by ids (a capture's tool map, say) are one member
            name = "<id>" if re.fullmatch(r"[0-9a-f-]{20,}", name) else name
            into.setdefault("paths", set()).add(f"{path}.{name}")
            member_paths(member, f"{path}.{name}", into)
    elif isinstance(value, list):
        for item in value:
            member_paths(item, f"{path}[]", into)


def formats(path):
    into = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            member_paths(json.loads(line), "", into)
    return into.get("paths", set()), into.get("orders", set())


def compare_formats(name, old_path, new_path):
    """The format in names: members only one build writes, and objects with the same members
    in another order. Printed whether or not the bytes agree, since new members explain most
    differences between builds far apart."""
    (old_paths, old_orders), (new_paths, new_orders) = formats(old_path), formats(new_path)
    gone, added = sorted(old_paths - new_paths), sorted(new_paths - old_paths)
    old_by_set = {(p, frozenset(o)): o for p, o in old_orders}
    reordered = sorted({p for p, o in new_orders if old_by_set.get((p, frozenset(o)), o) != o})
    print(f"{name} members: {len(gone)} only old {gone[:12]}, {len(added)} only new {added[:12]}, "
          f"{len(reordered)} objects reordered {reordered[:6]}")


def main():
    old_dir, new_dir = sys.argv[1], sys.argv[2]
    failed = False
    for name in FILES:
        compare_formats(name, f"{old_dir}/{name}.jsonl", f"{new_dir}/{name}.jsonl")
        old, new = masked(f"{old_dir}/{name}.jsonl"), masked(f"{new_dir}/{name}.jsonl")
        if old == new:
            print(f"{name}: {len(new)} lines, identical after masking")
            continue
        failed = True
        pairs = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        unmatched = sum(i2 - i1 for tag, i1, i2, _, _ in pairs if tag != "equal")
        print(f"{name}: DIFFERENT ({len(old)} old lines, {len(new)} new; {unmatched} old lines "
              f"without a twin); where the first ones differ (old || new):")
        shown = 0
        for tag, i1, i2, j1, j2 in pairs:
            if tag == "equal":
                continue
            for a, b in itertools.zip_longest(old[i1:i2], new[j1:j2], fillvalue=""):
                at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                print(f"   …{a[max(0, at - 80):at + 60].rstrip()}…\n    || …{b[max(0, at - 80):at + 60].rstrip()}…")
                shown += 1
                if shown == 6:
                    break
            if shown == 6:
                break
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
