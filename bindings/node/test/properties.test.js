'use strict';
// Properties (fast-check): any bytes give a verdict; any split of the body into chunks fed to
// StreamClassifier gives the verdict classify() gives for the whole body.

const test = require('node:test');
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { classify, StreamClassifier } = require('..');
const { goldenFiles, nonBlankLines, classifyArguments } = require('./golden.js');

// Real bodies from the golden vectors, so that mutations reach the JSON, SSE and rule code.
const seedBodies = goldenFiles()
  .flatMap((f) => nonBlankLines(f))
  .map((l) => classifyArguments({ ...JSON.parse(l), rawLine: l })[2])
  .filter((b) => b.length < 4096);

const contentTypes = ['application/json', 'text/event-stream', 'application/json; charset=latin1', 'text/html', ''];

const bytes = (max) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const body = fc.oneof(
  bytes(2048),
  fc.constantFrom(...seedBodies),
  fc
    .tuple(fc.constantFrom(...seedBodies), fc.nat(), fc.nat({ max: 8 }), bytes(16))
    .map(([seed, at, cut, insert]) => {
      const i = at % (seed.length + 1);
      return Buffer.concat([seed.subarray(0, i), insert, seed.subarray(i + cut)]);
    }),
);

const response = fc
  .record({
    status: fc.oneof(fc.constantFrom(200, 200, 200, 202, 204, 401, 404, 429, 503), fc.integer({ min: 100, max: 999 })),
    contentType: fc.constantFrom(...contentTypes),
    retryAfter: fc.option(fc.constantFrom('2', '-1', 'Wed, 21 Oct 2015 07:28:00 GMT', 'soon')),
    body,
    expectId: fc.constantFrom(1, 7, '1', 'abc'),
  })
  .chain((r) => fc.array(fc.integer({ min: 0, max: r.body.length }), { maxLength: 12 }).map((cuts) => ({ ...r, cuts: cuts.sort((a, b) => a - b) })));

function headersOf(r) {
  const h = [];
  if (r.contentType) h.push(['Content-Type', r.contentType]);
  if (r.retryAfter !== null) h.push(['Retry-After', r.retryAfter]);
  return h;
}

test('any split of the body gives the whole-body verdict', () => {
  fc.assert(
    fc.property(response, (r) => {
      const options = { expectId: r.expectId, now: 0 };
      const whole = classify(r.status, headersOf(r), r.body, options);
      assert.ok(['transport', 'protocol', 'interaction', 'application'].includes(whole.layer));
      const stream = new StreamClassifier(r.status, headersOf(r), options);
      const edges = [0, ...r.cuts, r.body.length];
      for (let i = 0; i + 1 < edges.length; i++) {
        stream.feed(r.body.subarray(edges[i], edges[i + 1]));
        if (stream.isDecided) break;
      }
      assert.deepStrictEqual(stream.finish(), whole);
    }),
    { numRuns: 1500 },
  );
});

test('any bytes give a verdict, and feeding past the verdict is harmless', () => {
  fc.assert(
    fc.property(bytes(4096), fc.constantFrom(...contentTypes), fc.integer({ min: 100, max: 999 }), (b, ct, status) => {
      const headers = ct ? { 'content-type': ct } : {};
      const v = classify(status, headers, b.buffer.slice(b.byteOffset, b.byteOffset + b.length), { now: 0 });
      assert.match(v.outcome, /^[A-Z_]+$/);
      const stream = new StreamClassifier(status, headers, { now: 0 });
      for (let at = 0; at < b.length; at += 64) stream.feed(new DataView(b.buffer, b.byteOffset + at, Math.min(64, b.length - at)));
      stream.finish();
    }),
    { numRuns: 300 },
  );
});
