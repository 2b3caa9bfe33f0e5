'use strict';
// Times the Node binding over an exchange file (bench/bindings-throughput.sh runs it).
//
//   node throughput.cjs FILE.jsonl RUNS
//
// Two figures, each the median of RUNS passes: `endToEnd` reads the file, parses each line with
// JSON.parse into classify()'s arguments (as crates/mcp-triage-core/src/exchange.rs does) and
// classifies it — the same work as `mcp-triage classify --batch`; `classifyOnly` times the
// classify() calls alone over arguments prepared beforehand. Prints one JSON object.

const fs = require('node:fs');
const path = require('node:path');
const { classify } = require(path.resolve(__dirname, '../../bindings/node'));

function args(x) {
  const headers = [];
  if (x.contentType) headers.push(['Content-Type', x.contentType]);
  for (const name of Object.keys(x.headers || {}).sort()) {
    if (name.toLowerCase() !== 'content-type' || !('contentType' in x)) headers.push([name, x.headers[name]]);
  }
  const body = 'bodyBase64' in x ? Buffer.from(x.bodyBase64, 'base64') : Buffer.from(x.body ?? '', 'utf8');
  return [x.status, headers, body, { expectId: x.expectId ?? 1, now: 0 }];
}

// Lines of the file, read in blocks (a 390 MB file is near V8's longest string).
function* lines(file) {
  const fd = fs.openSync(file, 'r');
  const block = Buffer.alloc(8 << 20);
  let carry = Buffer.alloc(0);
  for (;;) {
    const n = fs.readSync(fd, block, 0, block.length, null);
    const data = n === 0 ? carry : Buffer.concat([carry, block.subarray(0, n)]);
    let start = 0;
    for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
      if (nl > start) yield data.toString('utf8', start, nl);
      start = nl + 1;
    }
    carry = Buffer.from(data.subarray(start));
    if (n === 0) break;
  }
  if (carry.length > 0) yield carry.toString('utf8');
  fs.closeSync(fd);
}

function endToEnd(file) {
  const outcomes = {};
  let n = 0;
  let bytes = 0;
  for (const line of lines(file)) {
    if (line.trim() === '') continue;
    const [status, headers, body, options] = args(JSON.parse(line));
    const v = classify(status, headers, body, options);
    outcomes[v.outcome] = (outcomes[v.outcome] || 0) + 1;
    n += 1;
    bytes += body.length;
  }
  return { n, bytes, outcomes };
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const seconds = (t) => Number(process.hrtime.bigint() - t) / 1e9;

const [file, runsText] = process.argv.slice(2);
const runs = Number(runsText);
const e2e = [];
let result;
for (let i = 0; i < runs; i++) {
  const t = process.hrtime.bigint();
  result = endToEnd(file);
  e2e.push(seconds(t));
}
const prepared = [];
for (const line of lines(file)) if (line.trim() !== '') prepared.push(args(JSON.parse(line)));
const only = [];
for (let i = 0; i < runs; i++) {
  const t = process.hrtime.bigint();
  for (const [status, headers, body, options] of prepared) classify(status, headers, body, options);
  only.push(seconds(t));
}
console.log(JSON.stringify({ exchanges: result.n, bytes: result.bytes, outcomes: result.outcomes, endToEnd: median(e2e), classifyOnly: median(only) }));
