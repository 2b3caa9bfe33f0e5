// Tally a conformance run and hold README.md's conformance table to it (issue 46: every count
// the README states is checked). The interop scripts call this after each run:
//
//   node conformance-table.mjs [--write] README KEY SUITE_VERSION NOT_RUN RESULTS_DIR
//
// RESULTS_DIR holds the suite's result directories (`-o`): every `checks.json` below it is one
// scenario's checks. A directory with a file `scenario` is one CLI run of that scenario (the
// client script runs them one at a time) and may hold `exit`, the CLI's exit status: a run
// that exited non-zero or left no checks.json fails even when no check failed. Otherwise the
// scenario's name is its result directory's, less the suite's timestamp.
//
// Prints a line per scenario (checks passed, failed, skipped; each failed check) and the
// totals; then finds the table row whose Run cell starts with `KEY` between
// <!-- conformance-table --> and <!-- /conformance-table --> (none for KEY -) and compares its Suite, Scenarios,
// Not run, Checks passed and Checks failed cells with SUITE_VERSION, the tally and NOT_RUN
// (scenarios the script skips on purpose). --write rewrites those cells instead. A check
// counts as failed when its status is FAILURE or WARNING (the suite fails a run on either);
// SKIPPED is shown, INFO is not counted. Exits 1 on any failed check or run, or a row that
// does not match.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const START = "<!-- conformance-table -->";
const END = "<!-- /conformance-table -->";

/// Every directory at or below `dir` holding a checks.json.
function checkDirs(dir) {
  const found = [];
  const walk = (d) => {
    if (existsSync(join(d, "checks.json"))) found.push(d);
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
    }
  };
  walk(dir);
  return found;
}

/// The scenario a result directory belongs to: its run's `scenario` file, else its path less
/// the suite's `-2026-01-01T00-00-00-000Z` suffix and a `server-` prefix.
function scenarioName(root, dir) {
  const rel = relative(root, dir);
  const run = rel.split("/")[0];
  const named = join(root, run, "scenario");
  if (existsSync(named)) return readFileSync(named, "utf8").trim();
  return rel.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "").replace(/^server-/, "");
}

/// One entry per scenario: its checks by status and, for a one-scenario run, the CLI's exit.
function tally(root) {
  const scenarios = new Map();
  const entry = (name) => {
    if (!scenarios.has(name)) scenarios.set(name, { passed: 0, failed: [], skipped: 0, exit: 0, results: 0 });
    return scenarios.get(name);
  };
  for (const run of readdirSync(root)) {
    const named = join(root, run, "scenario");
    if (!existsSync(named)) continue;
    const e = entry(readFileSync(named, "utf8").trim());
    const exit = join(root, run, "exit");
    if (existsSync(exit)) e.exit = Number(readFileSync(exit, "utf8").trim());
  }
  for (const dir of checkDirs(root)) {
    const e = entry(scenarioName(root, dir));
    e.results += 1;
    for (const c of JSON.parse(readFileSync(join(dir, "checks.json"), "utf8"))) {
      if (c.status === "SUCCESS") e.passed += 1;
      else if (c.status === "FAILURE" || c.status === "WARNING") e.failed.push(c);
      else if (c.status === "SKIPPED") e.skipped += 1;
    }
  }
  return [...scenarios.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/// Prints the per-scenario lines and the totals; returns the totals.
function report(label, scenarios) {
  const width = Math.max(0, ...scenarios.map(([n]) => n.length));
  const totals = { scenarios: scenarios.length, passed: 0, failed: 0, skipped: 0, badRuns: 0 };
  console.log(`== ${label}`);
  for (const [name, e] of scenarios) {
    const badRun = e.exit !== 0 || e.results === 0;
    const ok = e.failed.length === 0 && !badRun;
    const extra = [
      e.skipped ? `${e.skipped} skipped` : "",
      e.results === 0 ? "no checks.json" : "",
      e.exit !== 0 ? `CLI exit ${e.exit}` : "",
    ].filter(Boolean);
    const tail = extra.length ? `, ${extra.join(", ")}` : "";
    console.log(`${ok ? "✓" : "✗"} ${name.padEnd(width)}  ${e.passed} passed, ${e.failed.length} failed${tail}`);
    for (const c of e.failed) console.log(`      ${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ""}`);
    totals.passed += e.passed;
    totals.failed += e.failed.length;
    totals.skipped += e.skipped;
    totals.badRuns += badRun ? 1 : 0;
  }
  console.log(
    `total: ${totals.scenarios} scenarios, ${totals.passed} checks passed, ${totals.failed} failed` +
      `, ${totals.skipped} skipped${totals.badRuns ? `; ${totals.badRuns} runs failed` : ""}`,
  );
  return totals;
}

/// The table's rows between the markers: [line index, cells] for each body row.
function tableRows(lines) {
  const start = lines.indexOf(START);
  const end = lines.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} … ${END} table`);
  const header = lines[start + 1].split("|").slice(1, -1).map((c) => c.trim());
  const rows = [];
  for (let i = start + 3; i < end; i++) {
    if (lines[i].startsWith("|")) rows.push([i, lines[i].split("|").slice(1, -1).map((c) => c.trim())]);
  }
  return { header, rows };
}

/// Compares (or with `write`, rewrites) the row KEY; returns the mismatches.
function holdRow(readme, key, want, write) {
  const text = readFileSync(readme, "utf8");
  const lines = text.split("\n");
  const { header, rows } = tableRows(lines);
  const col = (name) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`the conformance table has no "${name}" column`);
    return i;
  };
  const run = col("Run");
  const found = rows.find(([, cells]) => cells[run].startsWith(`\`${key}\``));
  if (!found) return [`no row whose Run cell starts with \`${key}\``];
  const [at, cells] = found;
  const mismatches = [];
  for (const [name, value] of Object.entries(want)) {
    const i = col(name);
    if (cells[i] !== String(value)) {
      mismatches.push(`${name}: the README says ${cells[i]}, this run ${value}`);
      cells[i] = String(value);
    }
  }
  if (write && mismatches.length > 0) {
    lines[at] = `| ${cells.join(" | ")} |`;
    writeFileSync(readme, lines.join("\n"));
    console.log(`README.md: row \`${key}\` rewritten (${mismatches.join("; ")})`);
    return [];
  }
  return mismatches;
}

function main() {
  const args = process.argv.slice(2);
  const write = args[0] === "--write";
  const [readme, key, version, notRun, dir] = write ? args.slice(1) : args;
  if (!dir) {
    console.error("usage: node conformance-table.mjs [--write] README KEY SUITE_VERSION NOT_RUN RESULTS_DIR");
    process.exit(2);
  }
  const totals = report(`${key === "-" ? "these scenarios" : key}, suite ${version}`, tally(dir));
  // KEY "-": a run of chosen scenarios, which no row describes.
  const mismatches = key === "-" ? [] : holdRow(readme, key, {
    Suite: version,
    Scenarios: totals.scenarios,
    "Not run": Number(notRun),
    "Checks passed": totals.passed,
    "Checks failed": totals.failed,
  }, write);
  for (const m of mismatches) console.log(`README.md conformance table, row \`${key}\`: ${m}`);
  if (mismatches.length > 0) console.log(`(rerun the script with --write to take this run's numbers)`);
  const ok = totals.failed === 0 && totals.badRuns === 0 && mismatches.length === 0;
  process.exit(ok ? 0 : 1);
}

main();
