'use strict';
// Every golden vector compressed (gzip, br, zstd: bindings/test.sh writes them with the core's
// `coded_golden` example) through the Node binding gives the plain vector's verdict, whole
// (classify) and fed in 7-byte chunks (StreamClassifier): the binding hands Content-Encoding to
// the core, which undoes it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { classify, StreamClassifier } = require('..');
const { codedCases, classifyArguments } = require('./golden.js');

const all = codedCases();

test('there are compressed golden cases in each coding', () => {
  assert.ok(all.length > 900, `${all.length} cases`);
  const codings = new Set(all.map((c) => c.testCase.headers['Content-Encoding']));
  assert.deepEqual([...codings].sort(), ['br', 'gzip', 'zstd']);
});

test('every compressed golden vector gets the plain verdict, whole and in 7-byte chunks', () => {
  const failures = [];
  for (const { file, line, testCase, want } of all) {
    const [status, headers, body, options] = classifyArguments(testCase);
    try {
      assert.deepStrictEqual(classify(status, headers, body, options), want);
      const stream = new StreamClassifier(status, headers, options);
      for (let at = 0; at < body.length; at += 7) {
        stream.feed(body.subarray(at, at + 7));
        if (stream.isDecided) break;
      }
      assert.deepStrictEqual(stream.finish(), want, 'fed in 7-byte chunks');
    } catch (e) {
      failures.push(`${file}:${line} ${testCase.headers['Content-Encoding']} ${testCase.name}: ${e.message}`);
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${all.length} compressed golden cases differ`);
});
