//! A check under load in the verdict section: the loads and where they ran, each round's
//! intensity, each CPU's figures idle beside loaded, and the load's effect as compare judged
//! it. Read through the type the check document is written with.

use maud::{Markup, html};

use crate::report::check_load::LoadBody;
use crate::report::html::svg::num;
use crate::report::measure::load::line;

/// The block of a check under load, after the verdict's figures.
pub(super) fn view(load: &LoadBody) -> Markup {
    let names: Vec<&str> = load.kinds.iter().map(|k| k.name()).collect();
    let micros = |ns: u64| num(ns as f64 / 1e3);
    html! {
        h3 { "Under load: " code { (names.join(",")) } " at level " (load.level.name())
             " on CPU " (load.cpus) }
        p { "Idle and loaded rounds in turn; the targets are judged on the loaded rounds."
            @if !load.loaded_as_asked { strong { " Not every loaded round was loaded as asked." } } }
        @if !load.skipped.is_empty() {
            ul.why { @for s in &load.skipped { li { code { (s.kind.name()) } " did not start: " (s.why) } } }
        }
        table.load {
            caption { "Each round's load: what each kind achieved, and the IPIs the measured CPUs received" }
            thead { tr { th { "round" } th { "" } th { "as asked" } th { "intensity" } } }
            tbody { @for (i, r) in load.rounds.iter().enumerate() {
                tr class=(if r.as_asked { "" } else { "status-fail" }) {
                    td { (i + 1) } td { (if r.loaded { "loaded" } else { "idle" }) }
                    td { (if r.as_asked { "yes" } else { "no" }) } td { (line(r)) }
                }
            } }
        }
        table {
            caption { "Each measured CPU idle (the idle rounds) and loaded (the figures above; latencies in µs)" }
            thead { tr { th { "CPU" } th { "interruptions idle" } th { "≥ 10 µs idle" } th { "longest idle" }
                th { "timer p99 idle" } th { "timer max idle" } } }
            tbody { @for f in &load.idle_figures {
                tr { td { (f.cpu) } td { (f.interruptions) } td { (f.long_interruptions) }
                     td { (micros(f.max_interruption_ns)) }
                     td { @if f.timer_samples > 0 { (micros(f.timer_p99_ns)) } @else { "–" } }
                     td { @if f.timer_samples > 0 { (micros(f.timer_max_ns)) } @else { "–" } } }
            } }
        }
        @if !load.effects.is_empty() {
            table {
                caption { "The load's effect, lowlat compare's method with the idle rounds as A and the loaded rounds as B" }
                thead { tr { th { "measurement" } th { "figure" } th { "idle" } th { "loaded" } th { "unit" } th { "loaded / idle" } th { "verdict" } } }
                tbody { @for e in &load.effects {
                    tr class=(if e.verdict == "worse" { "status-fail" } else { "" }) {
                        td { (e.measurement) } td { (e.endpoint) } td { (num(e.idle)) } td { (num(e.loaded)) }
                        td { (e.unit) } td { (num(e.ratio)) } td { (e.verdict) }
                    }
                } }
            }
        }
        @if !load.causes_added.is_empty() {
            table {
                caption { "Causes of the gaps the load added (per minute of busy loop)" }
                thead { tr { th { "cause" } th { "idle" } th { "loaded" } th { "verdict" } } }
                tbody { @for c in &load.causes_added {
                    tr { td { (c.cause) } td { (num(c.idle_per_minute)) } td { (num(c.loaded_per_minute)) } td { (c.verdict) } }
                } }
            }
        }
        @for note in &load.notes { div.note { (note) } }
        p { strong { (load.summary()) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::load::{Kind, KindIntensity, Level, RoundLoad, Skipped};
    use crate::report::check_load::LoadEffect;

    #[test]
    fn the_page_shows_each_rounds_intensity_the_effect_and_escapes_what_it_quotes() {
        let body = LoadBody {
            kinds: vec![Kind::Mem, Kind::Io],
            level: Level::Medium,
            cpus: "0".into(),
            skipped: vec![Skipped {
                kind: Kind::Io,
                why: "no scratch file in /<x>: denied".into(),
            }],
            loaded_as_asked: false,
            rounds: vec![RoundLoad {
                loaded: true,
                as_asked: false,
                kinds: vec![KindIntensity {
                    kind: Kind::Mem,
                    threads: 1,
                    rate: 3.1,
                    unit: "GB/s".into(),
                    over: None,
                    failed: None,
                }],
                ipis_received_per_s: Some(12.0),
            }],
            idle_figures: Vec::new(),
            effects: vec![LoadEffect {
                measurement: "timer wake-up latencies".into(),
                endpoint: "worst CPU's p99".into(),
                unit: "ns".into(),
                idle: 2300.0,
                loaded: 4100.0,
                ratio: 1.78,
                verdict: "worse".into(),
            }],
            causes_added: Vec::new(),
            notes: Vec::new(),
        };
        let page = view(&body).into_string();
        assert!(
            page.contains("mem 3.10 GB/s; the measured CPUs received 12.0 IPIs/s"),
            "{page}"
        );
        assert!(
            page.contains("no scratch file in /&lt;x&gt;: denied"),
            "{page}"
        );
        assert!(
            page.contains("Not every loaded round was loaded as asked"),
            "{page}"
        );
        assert!(page.contains("<td>worse</td>"), "{page}");
        assert!(
            page.contains(
                "under mem,io: timer wake-up latencies worst CPU's p99 2.3 µs → 4.1 µs (×1.78)"
            ),
            "{page}"
        );
    }
}
