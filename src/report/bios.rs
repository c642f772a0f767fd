//! The pages of `lowlat bios`: what a BMC reports, what apply staged, how verify found it.

use std::fmt::Write;

use serde_json::Value;

use crate::bios::intents::standings;
use crate::bios::settings::{BiosStatus, Check, JournalEntry};
use crate::bios::{BiosState, value_text};

/// The summary of `bios read`: the system, the registry, each intent this BIOS carries, and
/// every staged change.
pub fn render_read(state: &BiosState) -> String {
    let mut out = String::new();
    let unknown = || "unknown".to_string();
    let _ = writeln!(
        out,
        "BMC {}  system {} ({} {})",
        state.bmc,
        state.system.id,
        state.system.manufacturer.clone().unwrap_or_else(unknown),
        state.system.model.clone().unwrap_or_else(unknown),
    );
    let registry = match (&state.registry, &state.attribute_registry) {
        (Some(r), _) => format!("{} ({} attributes)", r.id, r.attributes.len()),
        (None, Some(id)) => format!("{id} (not served by this BMC: changes cannot be checked)"),
        (None, None) => "none named".to_string(),
    };
    let _ = writeln!(
        out,
        "{} attributes; registry {registry}; changes go to {}",
        state.current.len(),
        state.settings_object.as_deref().unwrap_or(&state.bios_uri)
    );
    let standings = standings(state);
    if !standings.is_empty() {
        let _ = writeln!(out, "\nIntents:");
        for s in &standings {
            let pending = s
                .pending
                .as_ref()
                .map(|p| format!("  (pending: {p} at next reset)"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<18} {:<12} {}{pending}",
                s.intent, s.current, s.attribute
            );
        }
    }
    if !state.pending.is_empty() {
        let _ = writeln!(out, "\nPending until the next reset:");
        for (name, value) in &state.pending {
            let now = state.current.get(name).map_or("-".to_string(), value_text);
            let _ = writeln!(out, "  {name}: {now} → {}", value_text(value));
        }
    }
    out
}

/// What `bios apply` staged (or would stage, with `--dry-run`).
pub fn render_staged(entries: &[JournalEntry], staged: bool) -> String {
    if entries.is_empty() {
        return "Nothing to change: every attribute is already set or staged as asked.\n"
            .to_string();
    }
    let mut out = String::new();
    let verb = if staged { "Staged" } else { "Would stage" };
    let _ = writeln!(out, "{verb} for the next reset:");
    for e in entries {
        let _ = writeln!(
            out,
            "  {}: {} → {}  [{}]",
            e.attribute,
            e.current.as_ref().map_or("-".to_string(), value_text),
            value_text(&e.wanted),
            e.request
        );
    }
    out
}

/// The checks of `bios verify`, one line each, then the count of each outcome; `shows_pending`
/// is false for a BMC without a settings object, whose staged values cannot be seen.
pub fn render_verify(checks: &[Check], shows_pending: bool) -> String {
    let mut out = String::new();
    let text = |v: &Option<Value>| v.as_ref().map_or("-".to_string(), value_text);
    for c in checks {
        let word = match c.outcome {
            BiosStatus::Ok => "ok",
            BiosStatus::PendingReset => "pending-reset",
            BiosStatus::Drift => "drift",
        };
        let shown = c
            .display_name
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{word:<14} {}{shown}: want {}, current {}, pending {}  [{}]",
            c.attribute,
            value_text(&c.wanted),
            text(&c.current),
            text(&c.pending),
            c.request
        );
        if let Some(inband) = &c.inband {
            let verdict = if inband.agrees { "agrees" } else { "DISAGREES" };
            let _ = writeln!(
                out,
                "               in-band: {} ({verdict})",
                inband.observed
            );
        }
    }
    let count = |o: BiosStatus| checks.iter().filter(|c| c.outcome == o).count();
    let _ = writeln!(
        out,
        "\n{} ok, {} pending a reset, {} drift",
        count(BiosStatus::Ok),
        count(BiosStatus::PendingReset),
        count(BiosStatus::Drift)
    );
    if !shows_pending && count(BiosStatus::Drift) > 0 {
        out.push_str(
            "This BMC shows no staged values (no @Redfish.Settings): a change `bios apply` staged is visible only after the next reset.\n",
        );
    }
    out
}
