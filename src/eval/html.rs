//! `ouro eval report --html`: one self-contained page (inline CSS and SVG, no external
//! assets): the summary, pass rate per task, and cost against time per trial.

use std::fmt::Write as _;

use super::report::per_task;
use super::results::{Results, Status};

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn page(results: &Results) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ouro eval: {}</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:60em}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}\
         .pass{{fill:#2a7}}.fail{{fill:#c33}}.other{{fill:#999}}text{{font:12px system-ui,sans-serif}}</style></head><body>",
        esc(&results.brain)
    );
    let _ = write!(
        out,
        "<h1>ouro eval</h1><p>brain <b>{}</b> on suite <code>{}</code></p><pre>{}</pre>",
        esc(&results.brain),
        esc(&results.suite),
        esc(&super::report::text(results))
    );
    out.push_str("<h2>Pass rate per task</h2>");
    out.push_str(&bars(results));
    out.push_str("<h2>Cost against time per trial</h2>");
    out.push_str(&scatter(results));
    out.push_str("</body></html>\n");
    out
}

fn bars(results: &Results) -> String {
    let rows = per_task(results);
    let (row_h, label_w, bar_w) = (22, 220, 360);
    let height = rows.len() * row_h + 10;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"pass rate per task\">",
        label_w + bar_w + 60
    );
    for (i, (task, (passed, scored, _))) in rows.iter().enumerate() {
        let y = i * row_h + 4;
        let rate = if *scored > 0 {
            *passed as f64 / *scored as f64
        } else {
            0.0
        };
        let w = (rate * bar_w as f64).round();
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\">{}</text><rect x=\"{label_w}\" y=\"{y}\" width=\"{bar_w}\" height=\"16\" class=\"other\" opacity=\"0.25\"/>\
             <rect x=\"{label_w}\" y=\"{y}\" width=\"{w}\" height=\"16\" class=\"pass\"/><text x=\"{}\" y=\"{}\">{passed}/{scored}</text>",
            y + 13,
            esc(task),
            label_w + bar_w + 6,
            y + 13
        );
    }
    svg.push_str("</svg>");
    svg
}

fn scatter(results: &Results) -> String {
    let (w, h, pad) = (600.0, 300.0, 40.0);
    let max_wall = results.trials.iter().map(|t| t.wall_s).fold(1e-9, f64::max);
    let max_cost = results
        .trials
        .iter()
        .map(|t| t.cost_usd)
        .fold(1e-9, f64::max);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"cost against time per trial\">\
         <line x1=\"{pad}\" y1=\"{}\" x2=\"{w}\" y2=\"{}\" stroke=\"#000\"/><line x1=\"{pad}\" y1=\"0\" x2=\"{pad}\" y2=\"{}\" stroke=\"#000\"/>\
         <text x=\"{}\" y=\"{}\">wall time (max {max_wall:.1} s)</text><text x=\"2\" y=\"12\">cost (max ${max_cost:.4})</text>",
        h - pad,
        h - pad,
        h - pad,
        w / 2.0 - 60.0,
        h - 8.0
    );
    for t in &results.trials {
        let x = pad + t.wall_s / max_wall * (w - pad - 10.0);
        let y = h - pad - t.cost_usd / max_cost * (h - pad - 20.0);
        let class = match t.status {
            Status::Passed => "pass",
            Status::InfraError => "other",
            _ => "fail",
        };
        let _ = write!(
            svg,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" class=\"{class}\"><title>{} #{}</title></circle>",
            esc(&t.task),
            t.trial
        );
    }
    svg.push_str("</svg>");
    svg
}
