'use strict';
// Reads the core's golden vectors (crates/mcp-triage-core/tests/golden/*.jsonl) into the arguments
// of classify(), as crates/mcp-triage-core/src/exchange.rs reads an exchange line, and the verdicts
// the Rust core gave for them (the directory bindings/test.sh fills with
// `mcp-triage classify --batch FILE --each --format json --now 0`).

const fs = require('node:fs');
const path = require('node:path');

const GOLDEN_DIR = path.resolve(__dirname, '../../../crates/mcp-triage-core/tests/golden');

function goldenFiles() {
  const files = fs.readdirSync(GOLDEN_DIR).filter((f) => f.endsWith('.jsonl')).sort();
  if (files.length < 10) throw new Error(`golden files missing in ${GOLDEN_DIR}`);
  return files.map((f) => path.join(GOLDEN_DIR, f));
}

function nonBlankLines(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
}

function expectedDir() {
  const dir = process.env.MCP_TRIAGE_EXPECTED;
  if (!dir) {
    throw new Error("MCP_TRIAGE_EXPECTED is not set: run bindings/test.sh, which writes the Rust core's verdicts for the golden files there");
  }
  return dir;
}

/** [{ file, line, testCase, want }] for every golden line. */
function cases() {
  const out = [];
  for (const file of goldenFiles()) {
    const lines = nonBlankLines(file);
    const expected = nonBlankLines(path.join(expectedDir(), path.basename(file)));
    if (expected.length !== lines.length) {
      throw new Error(`${path.basename(file)}: ${lines.length} cases, ${expected.length} core verdicts`);
    }
    lines.forEach((line, i) => {
      const testCase = { ...JSON.parse(line), rawLine: line };
      out.push({ file: path.basename(file), line: i + 1, testCase, want: JSON.parse(expected[i]) });
    });
  }
  return out;
}

/** [{ file, line, testCase, want }] for every line bindings/test.sh wrote compressed (gzip, br,
 * zstd) into $MCP_TRIAGE_CODED: `want` is the Rust core's verdict of the plain line. */
function codedCases() {
  const dir = process.env.MCP_TRIAGE_CODED;
  if (!dir) throw new Error('MCP_TRIAGE_CODED is not set: run bindings/test.sh, which writes the compressed golden vectors there');
  const out = [];
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()) {
    const expected = nonBlankLines(path.join(expectedDir(), name));
    for (const line of nonBlankLines(path.join(dir, name))) {
      const testCase = { ...JSON.parse(line), rawLine: line };
      out.push({ file: name, line: testCase.plainLine, testCase, want: JSON.parse(expected[testCase.plainLine - 1]) });
    }
  }
  return out;
}

/** [status, headers, body, options] for classify(). */
function classifyArguments(c) {
  const headers = [];
  if (c.contentType) headers.push(['Content-Type', c.contentType]);
  // The core reads `headers` into a sorted map and skips Content-Type there when the line has
  // `contentType`. (Rust sorts by bytes; these names are ASCII, where that is JS's sort order.)
  for (const name of Object.keys(c.headers || {}).sort()) {
    if (name.toLowerCase() === 'content-type' && 'contentType' in c) continue;
    headers.push([name, c.headers[name]]);
  }
  const body = 'bodyBase64' in c ? Buffer.from(c.bodyBase64, 'base64') : Buffer.from(c.body ?? '', 'utf8');
  const options = { expectId: c.expectId ?? 1, now: 0 };
  if (typeof c.expectId === 'number' && !Number.isSafeInteger(c.expectId)) {
    // JSON.parse rounded it: read the digits from the line itself (a BigInt, as index.d.ts says).
    options.expectId = BigInt(c.rawLine.match(/"expectId":\s*(-?\d+)/)[1]);
  }
  if ('protocolVersion' in c) options.protocolVersion = c.protocolVersion;
  if ('outputSchema' in c) options.outputSchema = c.outputSchema;
  if ('method' in c) options.method = c.method; // tasks.jsonl: answers to tasks/get, task polls
  if ('now' in c) options.now = new Date(c.now);
  return [c.status, headers, body, options];
}

module.exports = { cases, codedCases, classifyArguments, goldenFiles, nonBlankLines };
