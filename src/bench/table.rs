//! The human-readable form of a [`Report`]: the same figures as the JSON, with pipeline phases
//! in microseconds.

use std::fmt::Write as _;

use super::measure::{Percentiles, Spread};
use super::report::{Report, ratio};

fn spread_cells(s: &Spread, unit: &str) -> String {
    format!("{:>10.3} {unit:<4}{:>10.3}{:>10.3}", s.median, s.min, s.max)
}

fn micros(p: &Percentiles) -> String {
    format!("{:.0}/{:.0}/{:.0}", p.p50 * 1e3, p.p95 * 1e3, p.max * 1e3)
}

/// Left-aligned columns, each as wide as its widest cell plus two spaces.
fn grid(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// The human-readable table.
pub(super) fn render(r: &Report) -> String {
    let c = &r.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ouro {} bench: {} turns x {} calls ({}), {} files, seed {}; {} runs after {} warm-up",
        c.version, c.turns, c.calls_per_turn, c.mix, c.files, c.seed, c.runs, c.warmup
    );
    let _ = writeln!(
        out,
        "{} tool calls and {} requests per run\n",
        r.tool_calls_per_run, r.requests_per_run
    );
    let _ = writeln!(
        out,
        "{:<44}{:>10}     {:>10}{:>10}",
        "", "median", "min", "max"
    );
    let rows = [
        ("total wall time", &r.wall_ms, "ms"),
        ("tool calls per second", &r.calls_per_sec, "/s"),
        ("client time per turn", &r.client_turn_ms, "ms"),
        ("response time (mock + HTTP + SSE)", &r.response_ms, "ms"),
        (
            "start to first request (ouro -p)",
            &r.startup.first_request_ms,
            "ms",
        ),
        ("ouro -p wall time", &r.startup.known_wall_ms, "ms"),
        (
            "ouro -p wall time, checkpoints off",
            &r.startup.known_wall_without_checkpoints_ms,
            "ms",
        ),
        ("ouro -p, new project", &r.startup.tools_wall_ms, "ms"),
        (
            "ouro -p, new project, checkpoints off",
            &r.startup.tools_wall_without_checkpoints_ms,
            "ms",
        ),
        ("peak RSS (ouro -p)", &r.startup.peak_rss_mb, "MiB"),
        (
            "hello session: start to first request",
            &r.startup.hello_first_request_ms,
            "ms",
        ),
        ("hello session: wall time", &r.startup.hello_wall_ms, "ms"),
    ];
    for (name, s, unit) in rows {
        let _ = writeln!(out, "{name:<44}{}", spread_cells(s, unit));
    }
    let all = &r.client_turn_all_ms;
    let _ = writeln!(
        out,
        "client time per turn, all {} turns: p50 {:.3} ms, p95 {:.3} ms, max {:.3} ms",
        all.count, all.p50, all.p95, all.max
    );
    let _ = writeln!(
        out,
        "checkpoints add {:.3} ms per tool call to `ouro -p` in a project ouro knows; in a new one the first snapshot makes the session {:.2}x as long",
        r.startup.checkpoint_per_call_ms,
        r.startup
            .tools_wall_ms
            .ratio_to(&r.startup.tools_wall_without_checkpoints_ms)
    );
    let _ = writeln!(
        out,
        "(peak RSS includes the probe's own {:.1} MiB floor)\n",
        r.startup.floor_mb
    );

    let m = &r.marginal;
    let _ = writeln!(
        out,
        "marginal read-only call: the same turns with {} vs {} Read calls each",
        m.reads_low, m.reads_high
    );
    let _ = writeln!(
        out,
        "{:<44}{}",
        "wall time, low",
        spread_cells(&m.wall_low_ms, "ms")
    );
    let _ = writeln!(
        out,
        "{:<44}{}",
        "wall time, high",
        spread_cells(&m.wall_high_ms, "ms")
    );
    let _ = writeln!(
        out,
        "{:<44}{}",
        "client time per turn, low",
        spread_cells(&m.client_turn_low_ms, "ms")
    );
    let _ = writeln!(
        out,
        "{:<44}{}",
        "client time per turn, high",
        spread_cells(&m.client_turn_high_ms, "ms")
    );
    let _ = writeln!(
        out,
        "per extra call: {:.3} ms of wall time, {:.3} ms of client time\n",
        m.per_call_wall_ms, m.per_call_client_ms
    );

    let _ = writeln!(out, "pipeline phases per tool, microseconds p50/p95/max");
    let mut rows = vec![
        [
            "tool",
            "calls",
            "schema",
            "semantic",
            "pre-hooks",
            "permission",
            "execution",
            "post-hooks",
            "total",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for p in &r.phases {
        rows.push(vec![
            p.tool.clone(),
            p.total_ms.count.to_string(),
            micros(&p.schema_ms),
            micros(&p.semantic_ms),
            micros(&p.pre_hooks_ms),
            micros(&p.permission_ms),
            micros(&p.execution_ms),
            micros(&p.post_hooks_ms),
            micros(&p.total_ms),
        ]);
    }
    out.push_str(&grid(&rows));

    if let Some(rg) = &r.compare_rg {
        out.push('\n');
        match &rg.rg_version {
            None => out.push_str("Grep vs rg: rg is not on PATH, so there is nothing to compare; install ripgrep and rerun with --compare-rg\n"),
            Some(version) => {
                let _ = writeln!(out, "Grep tool vs {version} (medians, ms)");
                for case in &rg.cases {
                    let _ = writeln!(
                        out,
                        "  {:<34}{:<20}Grep {:>8.3}  rg {:>8.3}  ratio {:.2}",
                        case.pattern, case.mode, case.grep_ms.median, case.rg_ms.median, case.ratio
                    );
                }
                if let Some(ratio) = rg.overall_ratio {
                    let _ = writeln!(out, "  overall ratio (sum of medians): {ratio:.2}");
                }
            }
        }
    }

    match &r.sandbox {
        Some(s) => {
            let _ = writeln!(
                out,
                "\nsandbox: starting a Bash call takes {:.3} ms confined vs {:.3} ms not \
                 (median of {} spawns): +{:.3} ms per call",
                s.confined_ms, s.plain_ms, s.spawns, s.added_ms
            );
            match s.masked_added_ms {
                Some(masked) => {
                    let _ = writeln!(
                        out,
                        "sandbox with file deny rules masked (a mount namespace): +{masked:.3} ms per call"
                    );
                }
                None => out.push_str(
                    "sandbox with file deny rules: this kernel cannot mask paths, so nothing was measured\n",
                ),
            }
        }
        None => out.push_str("\nsandbox: this kernel has no Landlock, so nothing was measured\n"),
    }
    if let Some(m) = &r.mcp {
        let _ = writeln!(
            out,
            "\nMCP over stdio ({}, median of {} echo calls): {:.3} ms through ouro's tool vs \
             {:.3} ms bare rmcp: ouro adds {:.3} ms per call",
            m.server, m.calls, m.tool_ms.median, m.raw_ms.median, m.added_ms
        );
    }
    if let Some(c) = &r.checkpoints {
        let _ = writeln!(
            out,
            "\ncheckpoints of a {}-file project (median of {}): first {:.1} ms; before a prompt \
             {:.1} ms unchanged, {:.1} ms with one file changed; before a tool call after an Edit \
             {:.1} ms",
            c.files,
            c.runs,
            c.first_ms,
            c.unchanged_ms.median,
            c.one_file_changed_ms.median,
            c.after_an_edit_ms.median
        );
    }
    #[cfg(feature = "serve")]
    if let Some(serve) = &r.serve {
        let rates: Vec<String> = serve
            .turns_per_sec
            .iter()
            .map(|(sessions, rate)| format!("{rate:.1}/s with {sessions}"))
            .collect();
        let _ = writeln!(
            out,
            "
ouro serve: first chat:delta {:.1} ms after a follow-up turn's message (median; min {:.1}, max {:.1}; \
             {:.2}x the whole hello session's {:.1} ms); \
             turns {} session(s) at once; server peak RSS {:.1} MiB (a session's brain stays warm between turns); \
             RSS {:.1} MiB after 1000 turns over 200 sessions (limit {:.0}), {:.1} MiB with 20 clients \
             that never read 2 MB answers (limit {:.0}), {:.1} MiB once they have gone",
            serve.first_delta_ms.median,
            serve.first_delta_ms.min,
            serve.first_delta_ms.max,
            ratio(serve.first_delta_ms.median, r.startup.hello_wall_ms.median),
            r.startup.hello_wall_ms.median,
            rates.join(", "),
            serve.peak_rss_mb,
            serve.load_rss_mb,
            super::serve::LOAD_RSS_LIMIT_MB,
            serve.slow_rss_mb,
            super::serve::SLOW_RSS_LIMIT_MB,
            serve.slow_gone_rss_mb
        );
    }
    if let Some(m) = &r.memory {
        let _ = writeln!(
            out,
            "\npeak RSS of `ouro -p`: {:.1} MiB answering one word; {:.1} MiB for one 50 MB text \
             delta ({:.1} MiB printing it as stream-json), {:.1} MiB for a 50 MB tool result, \
             {:.1} MiB while Bash prints 1 GB",
            m.baseline_mb,
            m.delta_50mb_mb,
            m.delta_50mb_stream_json_mb,
            m.tool_result_50mb_mb,
            m.bash_1gb_mb
        );
    }
    if let Some(e) = &r.eval {
        let _ = writeln!(
            out,
            "\nouro eval on {} small tasks, one at a time: {:.0} ms from start to the first trial's first request; {:.0} ms per trial beyond the agent's own time",
            e.tasks, e.first_request_ms, e.overhead_per_trial_ms
        );
    }
    if let Some(m) = &r.recall {
        let _ = writeln!(
            out,
            "\nRecall on {} nodes and {} edges ({:.0} MB, built in {:.1} s): p50 {:.2} ms, p99 {:.2} ms; \
             with a vector per node ({:.0} nodes embedded/s), semantic Recall p50 {:.2} ms, p99 {:.2} ms; \
             reflect adds {:.0} ms after a print-mode answer (the answer is out first)",
            m.nodes,
            m.edges,
            m.file_mb,
            m.build_s,
            m.p50_ms,
            m.p99_ms,
            m.embedded_per_s,
            m.semantic_p50_ms,
            m.semantic_p99_ms,
            m.reflect_after_answer_ms
        );
    }
    if let Some(c) = &r.cats {
        let _ = writeln!(
            out,
            "\ncats of {} files, {:.0} MB: {:.0} ms ({:.0} MB/s; find + cat read them in {:.0} ms, {:.1}x); \
             dogs applying that bundle into an empty directory: {:.0} ms ({:.0} MB/s, {:.1}x; \
             cp -r wrote the same files in {:.0} ms, {:.1}x)",
            c.files,
            c.megabytes,
            c.cats_ms,
            c.megabytes / (c.cats_ms / 1000.0),
            c.floor_ms,
            ratio(c.cats_ms, c.floor_ms),
            c.dogs_ms,
            c.megabytes / (c.dogs_ms / 1000.0),
            ratio(c.dogs_ms, c.floor_ms),
            c.copy_ms,
            ratio(c.dogs_ms, c.copy_ms)
        );
    }
    if let Some(relay) = &r.relay {
        let _ = writeln!(
            out,
            "\ndaemon relay ({} keystrokes): round trip p50 {:.3} / p99 {:.3} ms through the \
             daemon, p50 {:.3} / p99 {:.3} ms on a direct PTY (overhead p99 {:.3} ms); output \
             {:.0} MB/s relayed, {:.0} MB/s direct ({:.2}x); daemon RSS with {} clones {:.1} MiB",
            relay.keystrokes,
            relay.relay_p50_ms,
            relay.relay_p99_ms,
            relay.direct_p50_ms,
            relay.direct_p99_ms,
            relay.overhead_p99_ms,
            relay.relay_mb_per_sec,
            relay.direct_mb_per_sec,
            ratio(relay.relay_mb_per_sec, relay.direct_mb_per_sec),
            super::relay::IDLE_CLONES + 1,
            relay.daemon_rss_mb
        );
    }
    if let Some(zone) = &r.relay_zone {
        let _ = writeln!(
            out,
            "zone {} ({} keystrokes): round trip p50 {:.3} / p99 {:.3} ms through the zone, \
             p50 {:.3} / p99 {:.3} ms over plain ssh -t (overhead p99 {:.3} ms); output {:.0} MB/s \
             through the zone, {:.0} MB/s over ssh",
            zone.zone,
            zone.keystrokes,
            zone.zone_p50_ms,
            zone.zone_p99_ms,
            zone.ssh_p50_ms,
            zone.ssh_p99_ms,
            zone.overhead_p99_ms,
            zone.zone_mb_per_sec,
            zone.ssh_mb_per_sec
        );
    }
    if !r.cost.is_empty() {
        out.push_str(
            "\ninput cost per scripted session (prompt caching, billed as the API bills it)\n",
        );
        for c in &r.cost {
            let _ = writeln!(
                out,
                "  {:>3} turns on {}: {:.0} base-rate input tokens for {} input tokens ({:.1}x less), cache hit ratio {:.2}, ${:.4}",
                c.turns,
                c.model,
                c.base_rate_input_tokens,
                c.input_tokens_uncached_equivalent,
                c.input_tokens_uncached_equivalent as f64 / c.base_rate_input_tokens.max(1.0),
                c.cache_hit_ratio,
                c.usd
            );
        }
    }
    if let Some(h) = &r.history {
        let _ = writeln!(
            out,
            "\nclient time per turn in one {}-turn session: {:.3} ms at turns 5-15, {:.3} ms at the last 10 (last request {:.1} MB)",
            h.turns, h.early_turn_ms, h.late_turn_ms, h.last_request_mb
        );
    }
    if let Some(r) = &r.resume {
        let _ = writeln!(
            out,
            "\nresuming a {:.0} MB transcript (`ouro -p --resume`, the answer included)",
            r.transcript_mb
        );
        for (what, run) in [
            ("compacted every 600 KB", &r.with_compactions),
            ("never compacted", &r.without_compactions),
        ] {
            let _ = writeln!(
                out,
                "  {what:<24}{:>9.1} ms, peak RSS {:>6.1} MB, {} requests",
                run.wall_ms, run.peak_rss_mb, run.requests
            );
        }
    }
    out.push_str("\ntargets\n");
    for t in &r.targets {
        let _ = writeln!(
            out,
            "  [{}] {:<52}{:>9.3} {:<3} ({} {} {})",
            if t.met { " ok " } else { "MISS" },
            t.name,
            t.measured,
            t.unit,
            if t.at_least { "at least" } else { "limit" },
            t.limit,
            t.unit
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_pads_columns_to_the_widest_cell() {
        let rows = vec![
            vec!["a".to_string(), "bb".to_string(), "c".to_string()],
            vec!["long".to_string(), "x".to_string(), "y".to_string()],
        ];
        assert_eq!(grid(&rows), "a     bb  c\nlong  x   y\n");
    }
}
