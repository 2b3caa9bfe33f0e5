//! One self-contained HTML page: inline CSS, inline SVG charts, no scripts, no network
//! (a CI artifact must open from disk years later, and a person should read it in any
//! browser). For each suite: a matrix case × check (pass / fail / n/a), then every failure
//! with its evidence and references. Charts and tables of the report follow.
//!
//! Numbers a reader looks for carry stable ids (`count-pass`, `count-fail`, `count-skip`,
//! `count-total`) so a test can find them in the DOM.

use std::io::{self, Write};

use crate::model::{Chart, Report, Series, Status, Suite, Table};
use crate::xml::{attr, text};

const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
h3{font-size:1rem}.meta{color:#57606a}
.totals{display:flex;gap:1rem;margin:1rem 0}.totals div{padding:.6rem 1rem;border-radius:6px;min-width:5rem}
.totals b{display:block;font-size:1.8rem}.t-pass{background:#dafbe1}.t-fail{background:#ffebe9}
.t-skip{background:#f6f8fa}.t-total{background:#ddf4ff}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.pass{background:#dafbe1}td.fail{background:#ffebe9;font-weight:600}td.skip{background:#f6f8fa;color:#57606a}
td.none{background:#fff}.scroll{overflow-x:auto}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
details{margin:.4rem 0}summary{cursor:pointer}.ref{color:#57606a;font-size:12px}
svg text{font:11px system-ui,sans-serif}
";

const PASS: &str = "#2da44e";
const FAIL: &str = "#cf222e";
const SKIP: &str = "#8c959f";
const PALETTE: &[&str] = &[
    "#2da44e", "#cf222e", "#bf8700", "#0969da", "#8250df", "#57606a", "#1b7c83", "#bc4c00",
];

/// Write `report` as a self-contained HTML page.
pub fn write(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let c = report.counts();
    writeln!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    )?;
    writeln!(
        w,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(
        w,
        "<title>{}</title><style>{CSS}</style></head><body>",
        text(&report.title)
    )?;
    writeln!(w, "<h1>{}</h1>", text(&report.title))?;
    if let Some(s) = &report.started {
        writeln!(w, "<p class=\"meta\">started {}</p>", text(s))?;
    }
    if c.total() > 0 {
        writeln!(
            w,
            "<div class=\"totals\"><div class=\"t-pass\"><b id=\"count-pass\">{}</b>passed</div>\
             <div class=\"t-fail\"><b id=\"count-fail\">{}</b>failed</div>\
             <div class=\"t-skip\"><b id=\"count-skip\">{}</b>not applicable</div>\
             <div class=\"t-total\"><b id=\"count-total\">{}</b>checks</div></div>",
            c.pass,
            c.fail,
            c.skip,
            c.total()
        )?;
        summary_chart(report, w)?;
    }
    for (i, suite) in report.suites.iter().enumerate() {
        suite_section(i, suite, w)?;
    }
    for (i, chart) in report.charts.iter().enumerate() {
        writeln!(w, "<h2>{}</h2>", text(&chart.title))?;
        bar_chart(i, chart, w)?;
    }
    for table in &report.tables {
        table_section(table, w)?;
    }
    writeln!(w, "</body></html>")
}

/// One horizontal stacked bar per suite: pass, fail, skip.
fn summary_chart(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let row = 26;
    let label_w = 260.0;
    let bar_w = 420.0;
    let h = row * report.suites.len() + 30;
    writeln!(
        w,
        "<svg role=\"img\" aria-label=\"checks per suite\" width=\"{}\" height=\"{h}\" viewBox=\"0 0 {} {h}\">",
        label_w + bar_w + 80.0,
        label_w + bar_w + 80.0
    )?;
    for (i, s) in report.suites.iter().enumerate() {
        let sc = s.counts();
        let y = i * row + 4;
        let total = sc.total().max(1) as f64;
        let name: String = s.name.chars().take(40).collect();
        writeln!(w, "<text x=\"0\" y=\"{}\">{}</text>", y + 14, text(&name))?;
        let mut x = label_w;
        for (n, color) in [(sc.pass, PASS), (sc.fail, FAIL), (sc.skip, SKIP)] {
            let width = bar_w * n as f64 / total;
            if width > 0.0 {
                writeln!(
                    w,
                    "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"18\" fill=\"{color}\"/>"
                )?;
            }
            x += width;
        }
        writeln!(
            w,
            "<text x=\"{}\" y=\"{}\">{}/{}</text>",
            label_w + bar_w + 6.0,
            y + 14,
            sc.pass,
            sc.total()
        )?;
    }
    let y = report.suites.len() * row + 20;
    for (k, (label, color)) in [("pass", PASS), ("fail", FAIL), ("n/a", SKIP)]
        .iter()
        .enumerate()
    {
        let x = label_w + k as f64 * 70.0;
        writeln!(
            w,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"{y}\">{label}</text>",
            y - 9,
            x + 14.0
        )?;
    }
    writeln!(w, "</svg>")
}

fn suite_section(i: usize, suite: &Suite, w: &mut dyn Write) -> io::Result<()> {
    let sc = suite.counts();
    writeln!(
        w,
        "<h2 id=\"suite-{i}\">{}</h2><p class=\"meta\">{} passed, {} failed, {} not applicable</p>",
        text(&suite.name),
        sc.pass,
        sc.fail,
        sc.skip
    )?;
    if !suite.properties.is_empty() {
        writeln!(w, "<table class=\"props\">")?;
        for (k, v) in &suite.properties {
            writeln!(w, "<tr><th>{}</th><td>{}</td></tr>", text(k), text(v))?;
        }
        writeln!(w, "</table>")?;
    }
    let columns = suite.check_names();
    if !columns.is_empty() {
        writeln!(
            w,
            "<div class=\"scroll\"><table class=\"matrix\"><tr><th>case</th>"
        )?;
        for col in &columns {
            writeln!(w, "<th>{}</th>", text(col))?;
        }
        writeln!(w, "</tr>")?;
        for case in &suite.cases {
            writeln!(w, "<tr><th>{}</th>", text(&case.name))?;
            for col in &columns {
                match case.checks.iter().find(|k| k.name == *col) {
                    None => writeln!(w, "<td class=\"none\"></td>")?,
                    Some(k) => {
                        let label = match k.status {
                            Status::Pass => "pass",
                            Status::Fail => "FAIL",
                            Status::Skip => "n/a",
                        };
                        writeln!(
                            w,
                            "<td class=\"{}\" title=\"{}\">{label}</td>",
                            k.status.as_str(),
                            attr(&k.message)
                        )?;
                    }
                }
            }
            writeln!(w, "</tr>")?;
        }
        writeln!(w, "</table></div>")?;
    }
    for case in &suite.cases {
        let failed: Vec<_> = case
            .checks
            .iter()
            .filter(|k| k.status == Status::Fail)
            .collect();
        if failed.is_empty() && case.output.is_empty() && case.journal.is_empty() {
            continue;
        }
        writeln!(w, "<h3>{}</h3>", text(&case.name))?;
        for k in failed {
            writeln!(
                w,
                "<details open><summary><b>{}</b>: {}</summary>",
                text(&k.name),
                text(&k.message)
            )?;
            if !k.evidence.is_empty() {
                writeln!(w, "<pre>{}</pre>", text(&k.evidence.join("\n")))?;
            }
            for r in &k.references {
                writeln!(w, "<div class=\"ref\">{}</div>", text(r))?;
            }
            writeln!(w, "</details>")?;
        }
        if !case.output.is_empty() {
            writeln!(
                w,
                "<details><summary>output</summary><pre>{}</pre></details>",
                text(&case.output)
            )?;
        }
        if !case.journal.is_empty() {
            let lines: Vec<String> = case.journal.iter().map(|e| e.to_string()).collect();
            writeln!(
                w,
                "<details><summary>journal ({} entries)</summary><pre>{}</pre></details>",
                case.journal.len(),
                text(&lines.join("\n"))
            )?;
        }
    }
    Ok(())
}

/// Vertical stacked bars, one per category, with a legend; values printed on hover
/// (`<title>`) and, for the total, above each bar.
fn bar_chart(idx: usize, chart: &Chart, w: &mut dyn Write) -> io::Result<()> {
    let n = chart.categories.len().max(1);
    let slot = (640.0 / n as f64).clamp(8.0, 60.0);
    let plot_h = 180.0;
    let left = 40.0;
    let width = left + slot * n as f64 + 20.0;
    let legend_h = 18.0 * chart.series.len().div_ceil(4) as f64;
    let height = plot_h + 50.0 + legend_h;
    let totals: Vec<f64> = (0..chart.categories.len())
        .map(|c| {
            chart
                .series
                .iter()
                .map(|s| s.values.get(c).copied().unwrap_or(0.0).max(0.0))
                .sum()
        })
        .collect();
    let max = totals.iter().copied().fold(0.0_f64, f64::max).max(1e-9);
    writeln!(
        w,
        "<svg id=\"chart-{idx}\" role=\"img\" aria-label=\"{}\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">",
        attr(&chart.title)
    )?;
    writeln!(
        w,
        "<line x1=\"{left}\" y1=\"{plot_h:.0}\" x2=\"{:.0}\" y2=\"{plot_h:.0}\" stroke=\"#8c959f\"/>",
        width - 10.0
    )?;
    writeln!(
        w,
        "<text x=\"0\" y=\"12\">{}</text><text x=\"0\" y=\"{plot_h:.0}\">0</text>",
        fmt_num(max)
    )?;
    for (c, cat) in chart.categories.iter().enumerate() {
        let x = left + c as f64 * slot + slot * 0.1;
        let bw = slot * 0.8;
        let mut y = plot_h;
        for (si, s) in chart.series.iter().enumerate() {
            let v = s.values.get(c).copied().unwrap_or(0.0).max(0.0);
            if v <= 0.0 {
                continue;
            }
            let h = (plot_h - 14.0) * v / max;
            y -= h;
            writeln!(
                w,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                series_color(s, si),
                text(cat),
                text(&s.label),
                fmt_num(v)
            )?;
        }
        if totals[c] > 0.0 && slot >= 24.0 {
            writeln!(
                w,
                "<text x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
                y - 2.0,
                fmt_num(totals[c])
            )?;
        }
        // Label every category when there is room, else about eight of them.
        let every = (n / 8).max(1);
        if slot >= 40.0 || c % every == 0 {
            let label: String = cat.chars().take(12).collect();
            writeln!(
                w,
                "<text x=\"{x:.1}\" y=\"{:.0}\">{}</text>",
                plot_h + 14.0,
                text(&label)
            )?;
        }
    }
    for (si, s) in chart.series.iter().enumerate() {
        let x = left + (si % 4) as f64 * 160.0;
        let y = plot_h + 36.0 + (si / 4) as f64 * 18.0;
        writeln!(
            w,
            "<rect x=\"{x}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y:.0}\">{}</text>",
            y - 9.0,
            series_color(s, si),
            x + 14.0,
            text(&s.label)
        )?;
    }
    writeln!(w, "</svg>")
}

/// The series' own colour when it is a plain CSS colour, else the palette's.
fn series_color(s: &Series, index: usize) -> String {
    match &s.color {
        Some(c) if c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '#') => c.clone(),
        _ => PALETTE[index % PALETTE.len()].to_string(),
    }
}

fn table_section(table: &Table, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "<h2>{}</h2><table><tr>", text(&table.title))?;
    for c in &table.columns {
        writeln!(w, "<th>{}</th>", text(c))?;
    }
    writeln!(w, "</tr>")?;
    for row in &table.rows {
        writeln!(w, "<tr>")?;
        for cell in row {
            writeln!(w, "<td>{}</td>", text(cell))?;
        }
        writeln!(w, "</tr>")?;
    }
    writeln!(w, "</table>")
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}
