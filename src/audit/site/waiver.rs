//! Waivers: a rule's failure accepted by the site, with a reason, an owner and a last day.
//! A waived failure is `waived`, which does not fail the audit; after its last day the
//! failure is a failure again, saying that the waiver expired.

use jiff::civil::Date;

use super::file::{RawWaiver, Source};
use super::model::{Place, Waiver};
use super::{SiteError, rule_named};
use crate::audit::finding::{Finding, FindingStatus, WaiverNote};

/// Reads one `[[waive]]`.
pub(super) fn read(source: &Source, raw: &RawWaiver) -> Result<Waiver, SiteError> {
    let rule = rule_named(source, raw.rule.get_ref(), raw.rule.span())?;
    let reason = super::reason_of(source, &raw.reason, "a waiver")?;
    let until = match &raw.until {
        None => None,
        Some(value) => {
            let text = match value.get_ref() {
                toml::Value::String(text) => text.clone(),
                toml::Value::Datetime(date) if date.time.is_none() => date.to_string(),
                other => format!("a {}", other.type_str()),
            };
            Some(text.parse::<Date>().map_err(|_| {
                source.error(
                    value.span(),
                    format!(
                        "until = {text}: not a date; write the last day the waiver holds as \
                         YYYY-MM-DD (\"2027-06-30\")"
                    ),
                )
            })?)
        }
    };
    let owner = match &raw.owner {
        Some(owner) if owner.get_ref().trim().is_empty() => {
            return Err(source.error(
                owner.span(),
                "owner is empty: name who owns the exception, or leave the key out",
            ));
        }
        Some(owner) => Some(owner.get_ref().trim().to_string()),
        None => None,
    };
    let (line, column) = source.line_column(raw.rule.span().start);
    Ok(Waiver {
        rule,
        reason,
        until,
        owner,
        place: Place {
            file: source.file.to_string(),
            line,
        },
        column,
    })
}

/// Applies the waivers to the findings on `today`: a failing or warning finding with a
/// waiver in force is `waived`; with an expired one it keeps its status and says so.
pub(crate) fn judge(findings: &mut [Finding], waivers: &[Waiver], today: Date) {
    for finding in findings {
        let Some(waiver) = waivers.iter().find(|w| w.rule.id == finding.rule) else {
            continue;
        };
        if !matches!(finding.status, FindingStatus::Fail | FindingStatus::Warn) {
            continue;
        }
        let expired = waiver.expired(today);
        if !expired {
            finding.status = FindingStatus::Waived;
        }
        finding.waiver = Some(WaiverNote {
            reason: waiver.reason.clone(),
            owner: waiver.owner.clone(),
            until: waiver.until.map(|d| d.to_string()),
            place: waiver.place.to_string(),
            expired,
        });
    }
}

/// Today's date in UTC, which waivers are judged on.
pub(crate) fn today() -> Date {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}
