// The package loads with `import` as well as `require`, and both give the same functions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import triage, { classify, StreamClassifier, decideRetry, OutputSchema } from 'mcp-triage';

test('import gives the require() functions', () => {
  const cjs = createRequire(import.meta.url)('mcp-triage');
  assert.equal(classify, cjs.classify);
  assert.equal(StreamClassifier, cjs.StreamClassifier);
  assert.equal(decideRetry, cjs.decideRetry);
  assert.equal(OutputSchema, cjs.OutputSchema);
  assert.equal(triage.classify, classify);
  const v = classify(204, {}, new Uint8Array(0));
  assert.equal(v.outcome, 'MISSING_RESPONSE');
});
