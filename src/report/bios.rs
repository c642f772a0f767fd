//! The pages and documents of `lowlat bios`: what a BMC reports (its document is
//! `BiosState::document`), what apply staged (and its journal), how verify found it, what
//! revert staged again.

use crate::text::Page;

use serde::Serialize;
use serde_json::Value;

use crate::bios::intents::standings;
use crate::bios::pipeline::Staged;
use crate::bios::settings::{AttributeCheck, BiosJournalEntry, BiosStatus};
use crate::bios::{BiosState, value_text};
use crate::document::{Document, Kind};

/// The body of a `bios-verify` document.
#[derive(Debug, Serialize)]
pub struct VerifyBody<'a> {
    /// The BMC, `scheme://host[:port]`.
    pub bmc: &'a str,
    /// One check per requested value.
    pub checks: &'a [AttributeCheck],
}

/// The `bios-verify` document of `bios verify --json`: one check per requested value.
pub fn verify_document<'a>(
    state: &'a BiosState,
    checks: &'a [AttributeCheck],
) -> Document<VerifyBody<'a>> {
    let body = VerifyBody {
        bmc: &state.bmc,
        checks,
    };
    Document::new(Kind::BiosVerify, state.host(), body)
}

/// The summary of `bios read`: the system, the registry, each intent this BIOS carries, and
/// every staged change.
pub fn read_text(state: &BiosState) -> String {
    let mut out = Page::new();
    let unknown = || "unknown".to_string();
    writeln!(
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
    writeln!(
        out,
        "{} attributes; registry {registry}; changes go to {}",
        state.current.len(),
        state.settings_object.as_deref().unwrap_or(&state.bios_uri)
    );
    let standings = standings(state);
    if !standings.is_empty() {
        out.line("\nIntents:");
        for s in &standings {
            let pending = s
                .pending
                .as_ref()
                .map(|p| format!("  (pending: {p} at next reset)"))
                .unwrap_or_default();
            writeln!(
                out,
                "  {:<18} {:<12} {}{pending}",
                s.intent, s.current, s.attribute
            );
        }
    }
    if !state.pending.is_empty() {
        out.line("\nPending until the next reset:");
        for (name, value) in &state.pending {
            let now = state.current.get(name).map_or("-".to_string(), value_text);
            writeln!(out, "  {name}: {now} → {}", value_text(value));
        }
    }
    out.into_string()
}

/// The page of `bios apply`: what it staged (or would stage, with `--dry-run`) and, when it
/// staged, whether the values wait for a reset.
pub(crate) fn apply_text(staged: &Staged) -> String {
    let mut out = Page::from(staged_text(&staged.journal.entries, staged.staged));
    if staged.staged {
        out.text(reboot_text(staged.reboot_required));
    }
    out.into_string()
}

/// What `bios apply` staged (or would stage, with `--dry-run`).
fn staged_text(entries: &[BiosJournalEntry], staged: bool) -> String {
    if entries.is_empty() {
        return "Nothing to change: every attribute is already set or staged as asked.\n"
            .to_string();
    }
    let mut out = Page::new();
    let verb = if staged { "Staged" } else { "Would stage" };
    writeln!(out, "{verb} for the next reset:");
    for e in entries {
        writeln!(
            out,
            "  {}: {} → {}  [{}]",
            e.attribute,
            e.current.as_ref().map_or("-".to_string(), value_text),
            value_text(&e.wanted),
            e.request
        );
    }
    out.into_string()
}

/// The checks of `bios verify` on `state`'s BMC, one line each, then the count of each
/// outcome, and what a BMC without a settings object (whose staged values cannot be seen)
/// means for drift.
pub fn verify_text(state: &BiosState, checks: &[AttributeCheck]) -> String {
    let shows_pending = state.settings_object.is_some();
    let mut out = Page::new();
    let text = |v: &Option<Value>| v.as_ref().map_or("-".to_string(), value_text);
    for c in checks {
        let word = c.outcome.name();
        let shown = c
            .display_name
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        writeln!(
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
            writeln!(
                out,
                "               in-band: {} ({verdict})",
                inband.observed
            );
        }
    }
    let count = |o: BiosStatus| checks.iter().filter(|c| c.outcome == o).count();
    writeln!(
        out,
        "\n{} ok, {} pending a reset, {} drift",
        count(BiosStatus::Ok),
        count(BiosStatus::PendingReset),
        count(BiosStatus::Drift)
    );
    if !shows_pending && count(BiosStatus::Drift) > 0 {
        out.text(
            "This BMC shows no staged values (no @Redfish.Settings): a change `bios apply` staged is visible only after the next reset.\n",
        );
    }
    out.into_string()
}

/// The line under `bios apply`'s page: whether the staged values wait for a reset.
fn reboot_text(reboot_required: bool) -> String {
    format!(
        "reboot_required: {}\n",
        if reboot_required { "yes" } else { "no" }
    )
}

/// The page of `bios revert`: the values staged again for the next reset.
pub fn restaged_text(values: &[(String, Value)]) -> String {
    let mut out = Page::from("Staged again for the next reset:\n");
    for (attribute, value) in values {
        writeln!(out, "  {attribute}: {}", value_text(value));
    }
    out.into_string()
}
