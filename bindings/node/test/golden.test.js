'use strict';
// Every golden vector through the Node binding gives the Rust core's verdict, key for key, both
// whole (classify) and fed in chunks (StreamClassifier).

const test = require('node:test');
const assert = require('node:assert/strict');
const { classify, StreamClassifier } = require('..');
const { cases, classifyArguments } = require('./golden.js');

const all = cases();

test('there are golden cases', () => {
  assert.ok(all.length > 300, `${all.length} cases`);
});

test('every golden vector matches the core, whole and in 7-byte chunks', () => {
  const failures = [];
  for (const { file, line, testCase, want } of all) {
    const [status, headers, body, options] = classifyArguments(testCase);
    const got = classify(status, headers, body, options);
    try {
      assert.deepStrictEqual(got, want);
      assert.equal(got.outcome, testCase.expect.outcome);
      const stream = new StreamClassifier(status, headers, options);
      for (let at = 0; at < body.length; at += 7) {
        stream.feed(body.subarray(at, at + 7));
        if (stream.isDecided) break;
      }
      assert.deepStrictEqual(stream.finish(), want, 'fed in 7-byte chunks');
    } catch (e) {
      failures.push(`${file}:${line} ${testCase.name}: ${e.message}`);
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${all.length} golden cases differ`);
});
