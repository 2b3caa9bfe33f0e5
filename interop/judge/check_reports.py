"""Check mcp-triage reports with software nobody here wrote.

    python check_reports.py junit FILE.xml TESTS FAILURES SKIPPED
        junitparser (PyPI, pinned in interop/python/requirements.lock) must read the file, and its counts must
        match; every failure must carry a message and its evidence text.
    python check_reports.py png FILE.png
        a Chromium screenshot must not be blank: decode the PNG (standard library only) and
        require several distinct colours and a good share of non-background pixels.
    python check_reports.py dom FILE.html ID=VALUE...
        the DOM Chromium dumped (--dump-dom) must hold each element id with that text.
"""
import re
import struct
import sys
import zlib


def check_junit(path, tests, failures, skipped):
    from junitparser import Failure, JUnitXml, Skipped

    xml = JUnitXml.fromfile(path)
    n = f = s = 0
    for suite in xml:
        for case in suite:
            n += 1
            for r in case.result:
                if isinstance(r, Failure):
                    f += 1
                    assert r.message, f"{case.classname}.{case.name}: failure without message"
                    assert "evidence:" in (r.text or ""), f"{case.classname}.{case.name}: no evidence"
                elif isinstance(r, Skipped):
                    s += 1
    got = (n, f, s)
    want = (int(tests), int(failures), int(skipped))
    assert got == want, f"junitparser read tests/failures/skipped {got}, expected {want}"
    assert (xml.tests, xml.failures, xml.skipped) == want, "testsuites totals disagree"
    print(f"junitparser: {path}: {n} tests, {f} failures, {s} skipped")


def png_pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h, ctype, depth = 8, b"", 0, 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and ctype in (2, 6), f"unexpected PNG type {ctype}/{depth}"
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path):
    w, h, bpp, rows = png_pixels(path)
    colours = {}
    for row in rows[::4]:
        for x in range(0, len(row), bpp * 4):
            px = row[x : x + 3]
            colours[px] = colours.get(px, 0) + 1
    total = sum(colours.values())
    background = max(colours.values())
    share = 1 - background / total
    assert len(colours) >= 8, f"only {len(colours)} colours: blank screenshot?"
    assert share >= 0.02, f"only {share:.1%} of pixels differ from the background"
    print(f"screenshot: {path}: {w}x{h}, {len(colours)} colours, {share:.1%} non-background")


def check_dom(path, pairs):
    dom = open(path, encoding="utf-8").read()
    assert "<svg" in dom, "no inline SVG chart in the DOM"
    for pair in pairs:
        key, value = pair.split("=", 1)
        m = re.search(r'id="%s"[^>]*>([^<]*)<' % re.escape(key), dom)
        assert m, f"no element with id {key} in the DOM"
        assert m.group(1).strip() == value, f"#{key} is {m.group(1)!r}, expected {value!r}"
    print(f"dom: {path}: {', '.join(pairs)}")


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:]
    {"junit": lambda: check_junit(*rest), "png": lambda: check_png(*rest),
     "dom": lambda: check_dom(rest[0], rest[1:])}[cmd]()
