// Count the checks of conformance scenarios that a `--requirements` run reports as "not
// scored" (the tasks extension scenarios and the pending ones): the CLI runs them but leaves
// them out of its exit status, and the kitchen means to pass them, so a failure there must
// fail the run too.
//
//   node unscored-checks.mjs RESULTS_DIR PREFIX EXPECTED_SCENARIOS
//
// Reads RESULTS_DIR/server-PREFIX*/checks.json, prints one line per scenario and a total, and
// exits 1 when a check failed (FAILURE or WARNING) or fewer than EXPECTED_SCENARIOS scenarios
// ran (a scenario that silently stopped running must not read as a pass).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [dir, prefix, expectedText] = process.argv.slice(2);
if (!dir || !prefix || !expectedText) {
  console.error("usage: node unscored-checks.mjs RESULTS_DIR PREFIX EXPECTED_SCENARIOS");
  process.exit(2);
}
const expected = Number(expectedText);
const runs = readdirSync(dir).filter((d) => d.startsWith(`server-${prefix}`)).sort();
let passed = 0;
let failed = 0;
let skipped = 0;
for (const run of runs) {
  const checks = JSON.parse(readFileSync(join(dir, run, "checks.json"), "utf8"));
  const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
  const ok = checks.filter((c) => c.status === "SUCCESS").length;
  const skip = checks.filter((c) => c.status === "SKIPPED").length;
  passed += ok;
  failed += bad.length;
  skipped += skip;
  const name = run.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
  console.log(`${bad.length === 0 ? "✓" : "✗"} ${name}: ${ok} passed, ${bad.length} failed${skip ? `, ${skip} skipped` : ""}`);
  for (const c of bad) console.log(`    ${c.status} ${c.id}: ${c.errorMessage ?? ""}`);
}
console.log(`${prefix}* scenarios: ${runs.length} run (expected ${expected}), ${passed} checks passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed === 0 && runs.length >= expected ? 0 : 1);
